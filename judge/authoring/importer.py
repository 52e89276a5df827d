"""`judge import PATH... [--problems DIR] [--number N]`: problems in the handbook's own format
(judge/authoring/handbook_format.py) become problems of this bank.

    <bank>/<NNN>-<slug>/
      problem.toml            module "solution", handbook module `checker`, [source] provenance
      statement.zh.md         the description; statement.en.md says the text is Chinese only
      explanation.zh.md       the text after `<!-- 题解 -->`, shown once a submission is accepted
      starter/solution.py     reference/solution.py (never mounted in a sandbox)
      tests/public/test_examples.py   test.py with only its test_example* functions
      tests/hidden/test_hidden.py     test.py with only the others

The slug is the stable key (the handbook renumbers its problems when chapters move): importing a
slug again rewrites that folder and keeps its number and its submissions/. New slugs get the
next free numbers from --base (900), or --number for a single problem. A folder this judge
cannot run is refused with the reason, the others are imported, and the exit status is 1.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from judge.authoring import native_format
from judge.authoring.handbook_format import NATIVE_SUFFIXES, REQUIRED_FILES, HandbookProblem, Refused, read_problems
from judge.authoring.import_check import imported_modules, needs_server
from judge.authoring.import_guard import MAX_FOLDERS, Unsafe, is_plain_dir, read_bytes
from judge.authoring.import_runtime import (
    find_runtime,
    install_note,
    install_runtime,
    plan_install,
    plan_modules,
    runtime_modules,
)
from judge.authoring.test_split import Split, split_tests
from judge.problem import REPO_ROOT, Problem, ProblemError, parse_config, problems_root

DEFAULT_BASE = 900
LICENCE = "CC BY-NC-SA 4.0"
LICENCE_URL = "https://creativecommons.org/licenses/by-nc-sa/4.0/"
ATTRIBUTION = "the LLM-inference handbook's practice problems, by the handbook's authors"
CHANGES = ("problem.md split into this statement and an explanation shown after an accepted "
           "submission; test.py split into public tests (its examples) and hidden tests")
EN_NOTE = ("This problem comes from the handbook's practice set, which is written in Chinese: "
           "its statement is only available in Chinese (below).")
CHECKER = REPO_ROOT / "reference" / "checker.py"
_FOLDER = re.compile(r"^(\d+)-([a-z0-9-]+)$")


@dataclass
class Imported:
    key: str                   # "<book>/<slug>"
    folder: Path
    number: int
    updated: bool
    notes: list[str] = field(default_factory=list)


@dataclass
class ImportResult:
    imported: list[Imported] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    notes: list[str] = field(default_factory=list)


# ---- finding the handbook's problems ------------------------------------------------------

def _looks_like_problem(d: Path) -> bool:
    return any((d / f).is_file() for f in REQUIRED_FILES) or \
        any(p.is_file() and p.suffix.lower() in NATIVE_SUFFIXES for p in d.iterdir())


def find_problem_folders(path: Path, depth: int = 0, skipped: list | None = None) -> list[Path]:
    """`path` itself when it is a problem folder, else the problem folders below it (a book,
    or the whole practice/problems folder). Links to folders are not followed: they are
    listed in `skipped` with the reason."""
    if _looks_like_problem(path):
        return [path]
    if depth >= 3:
        return []
    out = []
    subs = sorted(path.iterdir())
    if len(subs) > MAX_FOLDERS:
        raise Refused(f"{path}: more than {MAX_FOLDERS} entries")
    for sub in subs:
        if sub.name.startswith((".", "_")):
            continue
        if sub.is_symlink():
            if skipped is not None:
                skipped.append((str(sub), "a symbolic link; links are not followed"))
            continue
        if is_plain_dir(sub):
            out += find_problem_folders(sub, depth + 1, skipped)
    return out


def _source_path(folder: Path) -> str:
    parts = folder.resolve().parts
    for i in range(len(parts) - 1):
        if parts[i:i + 2] == ("practice", "problems"):
            return "/".join(parts[i:])
    return "/".join(parts[-2:])


# ---- the bank -----------------------------------------------------------------------------

def _bank_index(bank: Path) -> tuple[dict[str, tuple[Path, int, bool]], set[int]]:
    """({slug: (folder, number, imported from the handbook)}, numbers in use)."""
    by_slug, numbers = {}, set()
    for folder in sorted(bank.iterdir()) if bank.is_dir() else []:
        m = _FOLDER.match(folder.name)
        if not m:
            continue
        numbers.add(int(m.group(1)))
        try:
            data = tomllib.loads((folder / "problem.toml").read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            continue
        imported = (data.get("source") or {}).get("format") == "handbook"
        by_slug[str(data.get("slug") or m.group(2))] = (folder, int(m.group(1)), imported)
    return by_slug, numbers


def install_checker(base: Path) -> str | None:
    """The handbook modules of a bank live in <base>/reference/; imported tests need `checker`
    there. Returns a note when it had to be written."""
    dest = base / "reference" / "checker.py"
    if dest.is_file() and (dest.resolve() == CHECKER.resolve() or
                           dest.read_bytes() == CHECKER.read_bytes()):
        return None
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CHECKER, dest)
    return f"installed the handbook helpers `checker` as {dest}"


# ---- writing one problem ------------------------------------------------------------------

def _s(text: str) -> str:
    """A TOML basic string (JSON's escapes are a subset of TOML's)."""
    import json
    return json.dumps(text, ensure_ascii=False)


def _list(items) -> str:
    return "[" + ", ".join(_s(i) for i in items) + "]"


# The whole run's wall and CPU net (s), memory (MB), output (KB), least limit of a test (s).
# The handbook's own judge gives a Python problem's run 120 s in one process (practice/judge.py,
# judge_python's alarm); these are nets against runaway code, the verdict's limits are the
# reference's measured times (judging/clock.py), and the net caps the reference's own run.
NUMPY_LIMITS = (60, 60, 1024, 64, 3.0)
TORCH_LIMITS = (120, 120, 3072, 256, 5.0)
# A problem whose runtime module the trusted side serves (gpusim: every simulated access of the
# student's kernel is a request, about 50 a simulated thread) runs 50-90 times its one-process
# CPU here: cu-block-scan's hidden suite, 0.6 s in one process, charged its reference 39 s at
# load 4 and over the 60 s net at load 9-11 (the reference then IE, so every submission).
SERVED_LIMITS = (300, 300, 1024, 64, 3.0)


def suite_limits(torch: bool, served) -> tuple[int, int, int, int, float]:
    """The [limits] of an imported problem: the larger of each net where both apply."""
    picks = [NUMPY_LIMITS] + ([TORCH_LIMITS] if torch else []) + ([SERVED_LIMITS] if served else [])
    return tuple(max(col) for col in zip(*picks))


def problem_toml(hp: HandbookProblem, number: int, reference: str, *, source_url: str | None,
                 attribution: str | None, modules=(), install=()) -> str:
    torch = "torch" in hp.requires or "cuda" in hp.requires
    requires = (["torch"] if torch else []) + (["cuda"] if "cuda" in hp.requires else [])
    server_only = needs_server({"test.py": hp.tests, "solution.py": hp.solution,
                                "starter.py": hp.starter})
    # the page's Python has the standard library and `checker`; numpy, torch: Run on the server
    browser = not (server_only or torch or set(hp.requires) - {"local"} or "local" in hp.requires)
    why = (f"its tests need {', '.join(server_only or sorted(set(hp.requires)))}, which the page "
           "does not have: Run sends the public tests to the server") if not browser else \
        "pure Python: Run runs the public tests in the page"
    path = _source_path(hp.folder)
    url = f"{source_url.rstrip('/')}/{hp.book}/{hp.folder.name}" if source_url else ""
    # served: those of its own files' runtime modules the trusted side serves (proxied.py's
    # served_modules); a module only an install module imports (minitl) is not counted
    own = set().union(*(imported_modules(t) for t in (hp.tests, hp.solution, hp.starter)))
    limits = suite_limits(torch, served=[m for m in modules if m not in install and m in own])
    return f'''# Imported by `judge import` from {path}: edit the handbook's files and import again.
id = "{number}"
slug = "{hp.slug}"
difficulty = "{hp.difficulty}"
chapter = {_s(hp.chapter)}
tags = {_list(hp.tags)}
requires = {_list(requires)}
browser = {"true" if browser else "false"}   # {why}

[title]
en = {_s(hp.title)}
zh = {_s(hp.title)}

[submission]
module = "solution"

[handbook]
modules = {_list(["checker", *modules])}
{f"install = {_list(install)}   # their install() runs before the solution and the tests{chr(10)}" if install else ""}
[reference]
path = {_s(reference)}

[limits]
wall_s = {limits[0]}
cpu_s = {limits[1]}
memory_mb = {limits[2]}
output_kb = {limits[3]}
time_factor = 4.0
min_test_s = {limits[4]}

[source]
format = "handbook"
book = {_s(hp.book)}
slug = {_s(hp.folder.name)}
path = {_s(path)}
url = {_s(url)}
licence = "{LICENCE}"
licence_url = "{LICENCE_URL}"
attribution = {_s(attribution or ATTRIBUTION)}
changes = {_s(CHANGES)}
'''


def _header(path: str, what: str) -> str:
    return (f"# Generated by `judge import` from {path}/test.py: {what}.\n"
            "# Edit the handbook's test.py and import again rather than this file.\n")


def _statement(hp: HandbookProblem, note: str | None = None) -> str:
    """The description under one `# title` heading (its own, when it starts with one)."""
    lines = hp.description.splitlines()
    if lines and lines[0].startswith("# "):
        head, rest = lines[0], "\n".join(lines[1:]).strip()
    else:
        head, rest = f"# {hp.title}", hp.description
    return "\n\n".join([head] + ([f"> {note}"] if note else []) + [rest]) + "\n"


def write_problem(hp: HandbookProblem, dest: Path, number: int, reference: str,
                  **source) -> Split:
    """`source`: problem_toml's keywords (source_url, attribution, modules: the runtime
    modules, judge/authoring/import_runtime.py)."""
    """Writes the problem folder `dest` (which must not exist yet); returns how test.py was cut."""
    path = _source_path(hp.folder)
    files = {
        "problem.toml": problem_toml(hp, number, reference, **source),
        "statement.zh.md": _statement(hp),
        "statement.en.md": _statement(hp, EN_NOTE),
        "starter/solution.py": hp.starter,
        "reference/solution.py": hp.solution,
    }
    if hp.explanation:
        files["explanation.zh.md"] = f"{hp.explanation}\n"
    split = split_tests(hp.tests)
    files["tests/public/test_examples.py"] = (_header(path, "its examples (test_example*) and what "
                                                     "they use") + split.public)
    suites = ["public"]
    if split.others:
        files["tests/hidden/test_hidden.py"] = _header(path, "its other tests") + split.hidden
        suites.append("hidden")
    for rel, text in files.items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    for extra in hp.extra_files:  # helpers and data test.py reads next to itself
        for suite in suites:
            # a helper module or data file only the hidden tests name is an answer key too
            if suite == "public" and extra.stem not in split.public and \
                    extra.name not in split.public:
                continue
            (dest / "tests" / suite / extra.name).write_bytes(read_bytes(extra))
    return split


def _place(built: Path, final: Path) -> None:
    """Moves a built folder into the bank; an earlier import is replaced, its submissions/
    (written by instructors, not imported) kept."""
    if final.exists():
        if (final / "submissions").is_dir():  # copied, so a failure below loses nothing
            shutil.copytree(final / "submissions", built / "submissions")
        old = final.with_name(f".{final.name}.replaced")
        shutil.rmtree(old, ignore_errors=True)
        final.rename(old)
        built.rename(final)
        shutil.rmtree(old, ignore_errors=True)
    else:
        built.rename(final)


# ---- importing ----------------------------------------------------------------------------

def import_problems(paths, bank: Path | None = None, *, number: int | None = None,
                    base: int = DEFAULT_BASE, source_url: str | None = None,
                    attribution: str | None = None, runtime: Path | None = None) -> ImportResult:
    """`runtime`: the handbook's runtime modules (`practice/runtime/`); by default the one beside
    the `practice/problems/` each path is in, when there is one."""
    if runtime is not None and not is_plain_dir(Path(runtime)):
        raise ValueError(f"--runtime {runtime}: not a folder (links are not followed)")
    bank = problems_root(bank).resolve()
    res = ImportResult()
    folders = _find_all(paths, runtime, res)
    if number is not None and len(folders) > 1:
        raise ValueError(f"--number names one problem's number, but {len(folders)} problems "
                         "were found; import them without --number")
    problems = _read_all(folders, res)
    if not problems:
        return res
    bank.mkdir(parents=True, exist_ok=True)
    note = install_checker(bank.parent)
    if note:
        res.notes.append(note)
    by_slug, used = _bank_index(bank)
    seen: dict[str, str] = {}
    for hp, rt in problems:
        try:
            if hp.slug in seen:
                raise Refused(f"slug {hp.slug!r} was already imported from {seen[hp.slug]} in "
                              "this run; the slug is the stable key, so it must be unique")
            seen[hp.slug] = hp.key
            if isinstance(hp, native_format.NativeProblem):  # no Python runtime module
                res.imported.append(_import_one(hp, bank, by_slug, used, number, base,
                                                source_url=source_url, attribution=attribution))
                continue
            available = runtime_modules(rt)
            modules = plan_modules(hp, available)
            install = plan_install(hp, available)
            _install_runtime_modules(bank, modules, available, res, source_url, attribution)
            res.imported.append(_import_one(hp, bank, by_slug, used, number, base,
                                            source_url=source_url, attribution=attribution,
                                            modules=modules, install=install))
        except (Refused, ProblemError, Unsafe) as e:
            res.refused.append((str(hp.folder), str(e)))
    return res


def _find_all(paths, runtime: Path | None, res: ImportResult) -> list:
    """[(problem folder, its runtime folder)] under every path; the refused in `res`."""
    folders = []
    for p in map(Path, paths):
        if not p.is_dir():
            res.refused.append((str(p), "no such folder"))
            continue
        skipped: list[tuple[str, str]] = []
        try:
            found = find_problem_folders(p, skipped=skipped)
        except Refused as e:
            res.refused.append((str(p), str(e)))
            continue
        res.refused += skipped
        if not found and not skipped:
            res.refused.append((str(p), "no handbook problem here (no problem.md, starter.py, "
                                        "solution.py or test.py)"))
        rt = Path(runtime) if runtime is not None else find_runtime(p)
        folders += [(f, rt) for f in found]
    return folders


def _install_runtime_modules(bank: Path, modules, available: dict, res: ImportResult,
                             source_url: str | None, attribution: str | None) -> None:
    """The runtime modules a problem uses, into the bank, before the problem, whose modules
    must resolve when it is read."""
    for name in modules:
        note = install_runtime(bank.parent, name, available[name], source_url=source_url,
                               licence=LICENCE, licence_url=LICENCE_URL,
                               attribution=attribution or ATTRIBUTION)
        if note and note not in res.notes:
            res.notes.append(note)


def _read_all(folders, res: ImportResult) -> list:
    """[(problem, runtime folder)] of every half of every folder; the refused in `res`."""
    problems = []
    for folder, rt in folders:
        try:
            found, halves_refused = read_problems(folder)
        except Refused as e:
            res.refused.append((str(folder), str(e)))
            continue
        problems += [(hp, rt) for hp in found]
        # a folder with a Python and a C++ half: each is imported or refused on its own
        res.refused += [(f"{folder} ({half} half)", why) for half, why in halves_refused]
    return problems


def _import_one(hp: HandbookProblem | native_format.NativeProblem, bank: Path, by_slug, used: set[int], number, base,
                **source) -> Imported:
    existing = by_slug.get(hp.slug)
    if existing:
        folder, n, imported = existing
        if not imported:
            raise Refused(f"slug {hp.slug!r} is problem {folder.name} of this bank, which was "
                          "not imported from the handbook; it is left as it is")
        if number is not None and number != n:
            raise Refused(f"{hp.slug!r} was imported before as {folder.name}; the slug keeps its "
                          f"number (import it without --number, or remove {folder})")
    else:
        if number is not None and number in used:
            raise Refused(f"--number {number} is already a problem of {bank}")
        n = number if number is not None else next(i for i in range(base, base + 10**6)
                                                   if i not in used)
        folder = bank / f"{n:03d}-{hp.slug}"
    used.add(n)
    native = isinstance(hp, native_format.NativeProblem)
    suffix = hp.suffix if isinstance(hp, native_format.NativeProblem) else ".py"
    reference = f"{bank.name}/{folder.name}/reference/solution{suffix}"
    built = Path(tempfile.mkdtemp(prefix=f".judge-import-{hp.slug}-", dir=bank.parent))
    try:
        split: Split | None = None
        if isinstance(hp, native_format.NativeProblem):
            _write_native(hp, built, n, reference, **source)
        else:
            split = write_problem(hp, built, n, reference, **source)
        config = parse_config(built / "problem.toml")
        if not Problem(built, config).tests("public"):
            raise Refused("no public test after splitting test.py" if not native else
                          "no case found in the test")
        _place(built, folder)
    finally:
        shutil.rmtree(built, ignore_errors=True)
    by_slug[hp.slug] = (folder, n, True)
    notes = list(hp.notes)
    if source.get("modules"):
        notes.append("runtime modules (the handbook's, in the bank's reference/): "
                     + ", ".join(source["modules"]))
    for name in source.get("install") or ():
        notes.append(install_note(name))
    if split is not None and split.hidden_helpers:
        notes.append("kept out of the public tests (only hidden tests use them): "
                     + ", ".join(split.hidden_helpers))
    return Imported(hp.key, folder, n, updated=existing is not None, notes=notes)


def _write_native(np, dest: Path, number: int, reference: str, *, source_url=None,
                  attribution=None, **_) -> None:
    """A C++ / CUDA C++ problem's folder (native_format.py); it has no test split (its test
    file is kept whole, hidden)."""
    path = _source_path(np.folder)
    source = {"path": path, "url": f"{source_url.rstrip('/')}/{np.book}/{np.folder.name}"
              if source_url else "", "licence": LICENCE, "licence_url": LICENCE_URL,
              "attribution": attribution or ATTRIBUTION, "en_note": EN_NOTE}
    for rel, text in native_format.files(np, number, reference, source, _statement).items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
