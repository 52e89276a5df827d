"""The install step of an imported problem (`[handbook] install`, judge/problem/config.py): the
handbook's own judge calls `tritonkit.install()` before it imports the solution or the tests, so
that `import triton` finds a simulator (or real Triton where it and a CUDA device exist). Every
process that imports either calls `run()` first: the trusted test process and the one-process
runner (judge_runner.__main__), the submission's process (serve.py), the page's runner
(judge/browser/page_run.py, `prefer_real=False`).

The names come in ENV (set by the grader, judge/grading/child_env.py): a module's
`install(prefer_real=...)` is called. Nothing here decides a verdict: a module that fails to
install fails the run as any import would.
"""

from __future__ import annotations

import importlib
import os

ENV = "JUDGE_HANDBOOK_INSTALL"


def names_from_env() -> list[str]:
    return [n for n in os.environ.get(ENV, "").split(",") if n.isidentifier()]


def run(names: list[str] | None = None, *, prefer_real: bool | None = None) -> list[str]:
    """Calls each module's `install(prefer_real=...)`, in order; returns what each said (the
    handbook's says which Triton it installed). `prefer_real` None: real only on a CUDA run,
    since a CPU run of the same problem must not depend on whether the machine has a GPU."""
    if names is None:
        names = names_from_env()
    if prefer_real is None:
        prefer_real = os.environ.get("JUDGE_DEVICE") == "cuda"
    said = []
    for name in names:
        install = getattr(importlib.import_module(name), "install", None)
        if not callable(install):
            raise RuntimeError(f"the handbook module `{name}` has no install() to call")
        said.append(str(install(prefer_real=prefer_real)))
    return said
