"""The handbook's runtime modules (a clone's `practice/runtime/*.py`, e.g. the cuda book's
`gpusim`): `judge import` brings those a problem imports into the bank's `reference/` folder
(where `[handbook] modules` resolve, judge/problem/folder.py) and lists them in the problem.

`checker` is never taken from the clone: ours (reference/checker.py) is the harness's contract
with the trusted process (docs/IMPORTED_GRADING.md). Each copied module gets a
`<name>.source.toml` beside it with its provenance and licence, the fields a problem records in
its `[source]` table, since the module is the handbook's text as much as a problem is.
"""

from __future__ import annotations

import ast
import json
import os
import re
import stat
import sys
from pathlib import Path

from judge.authoring.handbook_format import INSTALLED_BY, HandbookProblem, Refused
from judge.authoring.import_check import _available, imported_modules
from judge.authoring.import_guard import read_bytes
from judge.judging import python_ast

OURS = frozenset({"checker", "solution", "judge_runner", "pytest"})

# The handbook reads a problem's requirements off the front matter and off the code (INSTALLED_BY,
# judge/authoring/handbook_format.py, says which are met by a runtime module's install()).
_REQUIRES_BY_CODE = {
    "numpy": re.compile(r"^\s*(import|from)\s+(numpy|gpusim|tritonkit|triton)\b", re.M),
    "triton": re.compile(r"^\s*(import|from)\s+(triton|tritonkit)\b", re.M),
}


def find_runtime(path: Path) -> Path | None:
    """The `runtime/` folder beside the `problems/` folder `path` is in or below (the clone's
    `practice/runtime/`), walking up from `path`; None when there is none."""
    p = Path(path).resolve()
    for d in (p, *p.parents):
        if d.name == "problems":
            rt = d.parent / "runtime"
            if rt.is_dir() and not rt.is_symlink():
                return rt
    return None


def runtime_modules(runtime: Path | None) -> dict[str, Path]:
    """{module name: file} of the flat modules in `runtime` (plain files, links not followed);
    `checker` and private names left out."""
    if runtime is None:
        return {}
    out = {}
    for f in sorted(Path(runtime).iterdir()):
        st = os.lstat(f)
        if f.suffix == ".py" and stat.S_ISREG(st.st_mode) and f.stem.isidentifier() \
                and not f.stem.startswith("_") and f.stem not in OURS:
            out[f.stem] = f
    return out


def _top_level_imports(source: str) -> set[str]:
    """Modules a file imports unconditionally (module-level statements, not inside a function,
    `try` or `if`): a module it cannot import makes the whole file fail."""
    try:
        tree = python_ast.parse(source)
    except SyntaxError:
        return set()
    out = set()
    for n in tree.body:
        if isinstance(n, ast.Import):
            out |= {a.name.split(".")[0] for a in n.names}
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            out.add(n.module.split(".")[0])
    return out


def all_requires(hp: HandbookProblem) -> list[str]:
    """The handbook's `all_requires`: the front matter's `requires` and what the test, solution
    and starter import (numpy, triton), sorted."""
    code = "\n".join((hp.tests, hp.solution, hp.starter))
    return sorted(set(hp.requires) | {r for r, line in _REQUIRES_BY_CODE.items()
                                      if line.search(code)})


def _where(runtime: dict[str, Path]) -> str:
    return (f"the runtime folder {runtime[next(iter(runtime))].parent} has "
            f"{', '.join(sorted(runtime))}" if runtime else
            "no runtime folder was found: a clone's practice/runtime/ beside "
            "practice/problems/, or one given with --runtime DIR")


def plan_install(hp: HandbookProblem, runtime: dict[str, Path]) -> list[str]:
    """The runtime modules whose `install()` must run before the problem's solution and tests
    are imported (`[handbook] install`). Raises Refused when a requirement needs one the
    runtime folder lacks and the grading environment does not have the package itself."""
    out = []
    for req in all_requires(hp):
        module = INSTALLED_BY.get(req)
        if module is None:
            continue
        if module in runtime:
            out.append(module)
        elif not _available(req):
            raise Refused(f"it needs `{req}` (its code imports it), which the handbook's judge "
                          f"provides by calling `{module}.install()` first; `{req}` is not "
                          f"installed in the grading environment and there is no `{module}` "
                          f"runtime module ({_where(runtime)}), so it could not run here")
    return out


def plan_modules(hp: HandbookProblem, runtime: dict[str, Path]) -> list[str]:
    """The runtime modules the problem needs, in order (those its test, solution or starter
    import, those these import in turn, and those `plan_install` names). Raises Refused when
    its test or solution imports, unconditionally, a module neither installed here nor in the
    runtime folder nor installed by one of its install modules."""
    installs = plan_install(hp, runtime)
    own = OURS | {p.stem for p in hp.extra_files} | \
        {req for req, module in INSTALLED_BY.items() if module in installs}
    files = {"test.py": hp.tests, "solution.py": hp.solution, "starter.py": hp.starter}
    for extra in hp.extra_files:
        if extra.suffix == ".py":
            files[extra.name] = read_bytes(extra).decode("utf-8", errors="replace")
    wanted: list[str] = []
    todo = installs + [name for text in files.values() for name in sorted(imported_modules(text))]
    while todo:
        name = todo.pop(0)
        if name in own or name in wanted or name in sys.stdlib_module_names \
                or name not in runtime:
            continue
        wanted.append(name)
        todo += sorted(imported_modules(runtime[name].read_text(encoding="utf-8",
                                                                errors="replace")))
    for where in ("test.py", "solution.py"):
        for name in sorted(_top_level_imports(files[where]) - own - set(wanted)):
            if not _available(name):
                raise Refused(f"its {where} imports `{name}`, which is neither installed in the "
                              f"grading environment nor a runtime module ({_where(runtime)}), "
                              "so it could not run here")
    return wanted


def _source_toml(name: str, path: str, url: str, **licence: str) -> str:
    s = lambda text: json.dumps(text, ensure_ascii=False)  # noqa: E731 (a TOML basic string)
    return (f"# Copied by `judge import` from {path}: import again rather than edit {name}.py.\n"
            "[source]\n"
            'format = "handbook"\n'
            f"module = {s(name)}\n"
            f"path = {s(path)}\n"
            f"url = {s(url)}\n"
            + "".join(f"{k} = {s(v)}\n" for k, v in licence.items())
            + 'changes = "none: copied as it is"\n')


def install_runtime(base: Path, name: str, src: Path, *, source_url: str | None,
                    **licence: str) -> str | None:
    """Copies runtime module `src` to `<base>/reference/<name>.py` with its provenance beside it.
    Returns a note when it wrote something (new, or different from what was there)."""
    data = read_bytes(src)
    dest = Path(base) / "reference" / f"{name}.py"
    path = f"practice/runtime/{src.name}"
    url = ""
    if source_url and source_url.rstrip("/").endswith("/problems"):
        url = f"{source_url.rstrip('/')[:-len('/problems')]}/runtime/{src.name}"
    meta = _source_toml(name, path, url, **licence)
    side = dest.with_name(f"{name}.source.toml")
    if dest.is_file() and dest.read_bytes() == data and side.is_file() and \
            side.read_text(encoding="utf-8") == meta:
        return None
    replaced = dest.is_file() and dest.read_bytes() != data
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    side.write_text(meta, encoding="utf-8")
    return (f"{'replaced' if replaced else 'installed'} the handbook runtime module `{name}` "
            f"as {dest} (from {src}; licence {licence.get('licence', '?')}, in {side.name})")


def install_note(name: str) -> str:
    """What `judge import` says of an install module; for tritonkit, which Triton the server
    will give (cheap to tell: whether the package is installed here)."""
    what = ""
    if name == INSTALLED_BY["triton"]:
        what = ("; on this machine the simulator (minitl): triton is not installed"
                if not _available("triton") else
                "; real Triton on a CUDA run (triton is installed here), the simulator on a CPU run")
    return (f"install step: `{name}.install()` runs before the solution and the tests in every "
            f"process that imports them (the page's with prefer_real=False){what}")
