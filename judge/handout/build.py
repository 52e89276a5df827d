"""A student's package of one or more problems: the runner's files, each problem's part
(contents.py), package.json and a README, audited (audit.py) and written as one zip.

    <top>/judge.py          the student's runner (practice/judge.py: it knows it is in a package)
    <top>/lib/...           the judge's browser-safe rooms and the terminal output it needs, and
                            the submit client (web/submit_client.py, web/token_store.py)
    <top>/problems/...      contents.py
    <top>/package.json      the server, the scope, the problems, what was left out, and why
    <top>/README.md         what to install and which commands to type (en, zh)

A problem whose part holds another included problem's secret is left out, with the reason, in
package.json and the README: 143 and 144 run on the handbook's prefix_cache.py, which is 142's
reference, so a package of 142 and 143 has 142 and says why 143 is not in it. A problem whose part
holds a secret of its own is an error (the problem is broken, not the package).
"""

from __future__ import annotations

import io
import json
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from judge import JUDGE_VERSION
from judge.browser.page_run import page_files
from judge.handout.audit import Secrets, findings, secrets_of
from judge.handout.contents import SCHEMA, ProblemPart, problem_part
from judge.messages import translate
from judge.problem import Problem

REPO = Path(__file__).resolve().parents[2]
# The terminal output and the package side of this room, besides the page's rooms; and the
# submit client, which is the project's HTTP side (web/): the judge copies it, never imports it.
RUNNER_EXTRA = ("judge/messages/__init__.py", "judge/messages/zh.json", "judge/cli/__init__.py",
                "judge/cli/console.py", "judge/cli/trace_text.py", "judge/cli/failure_text.py",
                "judge/cli/live_text.py",
                "judge/handout/__init__.py", "judge/handout/bundle.py",
                "judge/handout/local_run.py", "web/__init__.py", "web/submit_client.py",
                "web/token_store.py")
README_TEMPLATE = Path(__file__).with_name("package_readme.md")
# Names a problem may require that pip does not install (where it runs, not what it imports).
NOT_PIP = {"cuda", "local", "gpu"}


class PackageError(ValueError):
    """The package cannot be made (nothing to put in it, or a problem shows its own secret)."""


@dataclass
class Scope:
    """What the package is for: "problem", "assignment", "course" or "pack" (judge pack)."""
    kind: str
    title: str
    course_id: int | None = None
    assignment_id: int | None = None


@dataclass
class Package:
    top: str                                      # the zip's one folder
    files: dict[str, bytes] = field(default_factory=dict)
    manifest: dict = field(default_factory=dict)

    def zip_bytes(self) -> bytes:
        buf = io.BytesIO()
        write_zip(self, buf)
        return buf.getvalue()


def runner_files() -> dict[str, bytes]:
    files = {f"lib/{rel}": (REPO / rel).read_bytes() for rel in [*page_files(), *RUNNER_EXTRA]}
    files["judge.py"] = (REPO / "practice" / "judge.py").read_bytes()
    return files


def build_package(problems: list[Problem], scope: Scope, server: str | None,
                  top: str | None = None) -> Package:
    """The package of `problems` (in their order) for `scope`, submitting to `server`."""
    if not problems:
        raise PackageError("no problem to put in the package")
    parts = [problem_part(p) for p in problems]
    secrets = {part.problem.name: secrets_of(part.problem, _shown(part)) for part in parts}
    kept, left_out = _sort_out(parts, secrets)
    if not kept:
        raise PackageError("every problem was left out: " +
                           "; ".join(f"{x['name']}: {x['why']}" for x in left_out))
    pkg = Package(top or f"kvpractice-{_slug(scope, kept)}")
    pkg.files = runner_files()
    for part in kept:
        pkg.files.update(part.files)
    pkg.manifest = _manifest(kept, left_out, scope, server)
    pkg.files["README.md"] = readme(pkg.manifest).encode()
    pkg.files["package.json"] = json.dumps(pkg.manifest, ensure_ascii=False, indent=1).encode()
    leaks = audit_package(pkg.files, kept, secrets)
    if leaks:  # the parts were clean, so this is the runner or the README: never hand it out
        raise PackageError("the package would hold what it must not: " + "; ".join(leaks[:5]))
    return pkg


def audit_package(files: dict[str, bytes], kept: list[ProblemPart],
                  secrets: dict[str, Secrets]) -> list[str]:
    """Every file against every kept problem's secrets: a problem's own files for its names
    and code, the other files (the runner, the README, other problems) for code, and the
    files no problem brought for names too."""
    mine = {path: part.problem.name for part in kept for path in part.files}
    out = []
    for name in {p.problem.name for p in kept}:
        own = {k: v for k, v in files.items() if mine.get(k) == name}
        rest = {k: v for k, v in files.items() if mine.get(k) != name}
        common = {k: v for k, v in rest.items() if k not in mine}
        out += findings(own, [secrets[name]]) + findings(rest, [secrets[name]], names=False)
        out += [f for f in findings(common, [secrets[name]]) if " hidden name " in f]
    return sorted(set(out))


def _shown(part: ProblemPart) -> list[str]:
    return [data.decode("utf-8", errors="replace") for path, data in part.files.items()
            if not path.endswith("/problem.json")]


def _sort_out(parts: list[ProblemPart], secrets: dict[str, Secrets]):
    kept, left_out = [], []
    for part in parts:
        own = findings(part.files, [secrets[part.problem.name]])
        if own:
            raise PackageError(f"{part.problem.name} shows its own secrets: {own[:3]}")
        theirs = findings(part.files, [s for name, s in secrets.items()
                                       if name != part.problem.name], names=False)
        if theirs:
            owners = sorted({line.rsplit(" of ", 1)[1] for line in theirs})
            left_out.append({"id": part.problem.id, "name": part.problem.name,
                             "holds_secrets_of": owners,
                             "why": f"its files would hand out secrets of {', '.join(owners)}"})
        else:
            kept.append(part)
    return kept, left_out


def _slug(scope: Scope, kept: list[ProblemPart]) -> str:
    if scope.kind == "problem" and len(kept) == 1:
        return kept[0].problem.name
    if scope.kind == "assignment":
        return f"course-{scope.course_id}-assignment-{scope.assignment_id}"
    if scope.kind == "course":
        return f"course-{scope.course_id}"
    return "-".join(p.problem.id for p in kept)[:80]


def _manifest(kept: list[ProblemPart], left_out: list[dict], scope: Scope,
              server: str | None) -> dict:
    return {
        "schema": SCHEMA, "kind": "kvpractice-student-package", "judge_version": JUDGE_VERSION,
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "server": server, "scope": scope.__dict__,
        "problems": [{"id": p.problem.id, "name": p.problem.name, "titles": p.problem.titles,
                      "version": p.problem.version, "requires": p.problem.requires,
                      "browser": p.problem.browser, "handbook": p.modules,
                      "pip": pip_names(p.problem)} for p in kept],
        "left_out": left_out,
    }


def pip_names(problem: Problem) -> list[str]:
    """What a public run of `problem` needs installed besides pytest: nothing for a problem
    whose public tests run in the page (pure Python), else what it requires."""
    if problem.browser:
        return []
    return [r for r in problem.requires if r not in NOT_PIP]


def readme(manifest: dict) -> str:
    """README.md from package_readme.md: both languages, the problems, the install line."""
    pips = sorted({n for p in manifest["problems"] for n in p["pip"]})
    rows = "\n".join(f"| {p['id']} | {p['titles'].get('en', p['name'])} | "
                     f"{p['titles'].get('zh', p['name'])} | {', '.join(p['pip']) or '-'} |"
                     for p in manifest["problems"])
    out = {lang: "\n".join(f"- {x['name']}: " + translate(
        "left out: its files hold what {owners} keeps hidden (that problem's answer or tests); "
        "it comes in a package of its own, after that problem's deadline if it is graded", lang,
        owners=", ".join(x["holds_secrets_of"])) for x in manifest["left_out"]) or "-"
        for lang in ("en", "zh")}
    return README_TEMPLATE.read_text(encoding="utf-8").format(
        title=manifest["scope"]["title"], server=manifest["server"] or "-",
        install=" ".join(["pytest>=8.0", *pips]), problems=rows,
        left_out_en=out["en"], left_out_zh=out["zh"],
        first=manifest["problems"][0]["id"])


def write_zip(pkg: Package, target) -> None:
    """The package as a zip with one top folder; judge.py executable."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in sorted(pkg.files.items()):
            info = zipfile.ZipInfo(f"{pkg.top}/{path}", date_time=time.gmtime()[:6])
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (0o755 if path == "judge.py" else 0o644) << 16
            z.writestr(info, data)
