"""One problem's part of a student's package: its files and its problem.json.

    problems/<NNN-slug>/problem.json          what the page's Run is given (GET /api/problems/N):
                                              the module, the reference's public observations,
                                              the hints and labels a public failure can meet
    problems/<NNN-slug>/statement.<lang>.md   the statements
    problems/<NNN-slug>/starter/<module>.py   the starter
    problems/<NNN-slug>/tests/public/...      the public tests and their helpers
    problems/<NNN-slug>/handbook/<mod>.py     the handbook modules those files import (needs.py)

What the page gets and a package does not: a hint keyed only to hidden tests or to labels no public
test records, and the label translations of hidden observations (they say what the hidden tests
check); hidden test names are taken out of the hints that stay.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from judge.grading.environment import grading_python
from judge.grading.reference_cache import public_expectations_or_error
from judge.handout.needs import needed_modules
from judge.judging.labels import LabelTable, shape
from judge.problem import Problem, ProblemError

SCHEMA = 1


@dataclass
class ProblemPart:
    problem: Problem
    folder: str                # "problems/143-tiered-kv-cache"
    files: dict[str, bytes]    # path inside the package -> content
    meta: dict                 # problem.json
    modules: list[str]         # the handbook modules it carries


def problem_part(problem: Problem) -> ProblemPart:
    """The problem's files for a student's package (not yet audited: build.py does)."""
    folder = f"problems/{problem.name}"
    public = problem.public_files()
    starter = problem.starter_source
    available = problem.handbook_sources()
    install = [n for n in problem.config.handbook.install if n in available]
    modules = needed_modules([starter, *public.values(), *(available[n] for n in install)],
                             available)
    modules += [n for n in install if n not in modules]
    files = {f"{folder}/statement.{lang}.md": problem.statement(lang).encode()
             for lang in problem.languages()}
    files[f"{folder}/starter/{problem.module}.py"] = starter.encode()
    files.update({f"{folder}/tests/{rel}": text.encode() for rel, text in public.items()})
    files.update({f"{folder}/handbook/{name}.py": available[name].encode() for name in modules})
    meta = problem_meta(problem, public)
    files[f"{folder}/problem.json"] = json.dumps(meta, ensure_ascii=False, indent=1).encode()
    return ProblemPart(problem, folder, files, meta, modules)


def problem_meta(problem: Problem, public: dict[str, str]) -> dict:
    """problem.json: the fields of GET /api/problems/N that the page's Run uses, kept to what a
    public run can meet."""
    expected, why = public_expectations_or_error(problem)
    labels = _public_labels(expected)
    return {
        "schema": SCHEMA, **problem.summary(), "name": problem.name, "module": problem.module,
        "version": problem.version, "languages": problem.languages(),
        "install": list(problem.config.handbook.install),
        "tests": [t.name for t in problem.tests("public")],
        "examples": [t.name for t in problem.examples() if t.suite == "public"],
        "weights": {t.name: t.weight for t in problem.tests("public")},
        "expected": expected, "expectations_error": why,
        "hints": public_hints(_hints(problem), set(_tests(problem)), labels),
        "labels": {"zh": public_label_table(_labels(problem), labels, public)},
        # the server grades a suite within its wall limit: a laptop gets the same time for Run
        "run_timeout_s": float(problem.limits.wall_s),
        "grading_python": grading_python(), "source": problem.source,
        "has_explanation": problem.explanation("zh") is not None,
    }


def _tests(problem: Problem) -> list[str]:
    return [t.name for t in problem.tests("public")]


def _hints(problem: Problem) -> list[dict]:
    try:
        return problem.hints
    except ProblemError:  # `judge check` names what is wrong; the package goes without hints
        return []


def _labels(problem: Problem) -> dict[str, str]:
    try:
        return problem.labels("zh")
    except ProblemError:
        return {}


def _public_labels(expected: dict | None) -> set[str]:
    """The observation labels the reference recorded in the public tests."""
    out = set()
    for entry in (expected or {}).values():
        for obs in entry.get("observations") or []:
            if isinstance(obs, dict) and isinstance(obs.get("label"), str):
                out.add(obs["label"])
    return out


def public_hints(hints: list[dict], public_tests: set[str], labels: set[str]) -> list[dict]:
    """The hints a public failure can meet, each with only its public tests and labels."""
    out = []
    for hint in hints:
        tests = [t for t in hint.get("tests") or [] if t in public_tests]
        said = [x for x in hint.get("labels") or [] if x in labels]
        if tests or said:
            out.append({**hint, "tests": tests, "labels": said})
    return out


def public_label_table(table: dict[str, str], labels: set[str], public: dict[str, str]
                       ) -> dict[str, str]:
    """The entries of labels.zh.json that word a public label: one it matches, or a part of
    one (a case name inside a pattern), or one written in a public file (no reference run)."""
    texts = "\n".join(public.values())
    keep = {}
    for key, text in table.items():
        one = LabelTable({key: text})
        fixed = [p for p in shape(key).split("{}") if p.strip()]
        if any(one.lookup(x) is not None or key in x for x in labels) or \
                (not labels and fixed and all(p in texts for p in fixed)):
            keep[key] = text
    return keep
