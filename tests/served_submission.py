"""The submission's side of the call proxy (judge_runner.proxy.serve) in a plain subprocess, joined to a
guarded endpoint in the test's process: what the tests of the proxy's values, types and calls
talk to without a sandbox (the graded tests run both sides sandboxed). The fixtures over it,
`served_endpoint` and `served`, are tests/runner/conftest.py's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from paths import REPO

from judge.runner.proxy import Endpoint
from judge.runner.proxy.capabilities import Guard
from judge.runner.proxy.wire import Channel


def start_served(tmp_path: Path, module_source: str, procs: list,
                 guard: Guard | None = None) -> Endpoint:
    """Writes `module_source` as solution.py, starts its serving process (kept in `procs`, for
    the caller to stop) and returns the trusted side's endpoint after the hello. `guard`: the
    capability guard's view of which modules are the tests' own (default: this test file's
    folder, where the tests' objects of these tests are defined)."""
    if guard is None:
        guard = Guard(roots=(str(Path(__file__).parent),))
    (tmp_path / "solution.py").write_text(module_source, encoding="utf-8")
    a_r, a_w = os.pipe()
    b_r, b_w = os.pipe()
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{REPO / 'judge'}")
    proc = subprocess.Popen([sys.executable, "-m", "runner.proxy.serve", "--in-fd", str(a_r),
                             "--out-fd", str(b_w), "--module", "solution",
                             "--submission", str(tmp_path / "solution.py")],
                            pass_fds=(a_r, b_w), env=env)
    procs.append(proc)
    os.close(a_r)
    os.close(b_w)
    ch = Channel(b_r, a_w)
    assert ch.recv() == {"t": "ready"}
    ch.send({"t": "go"})  # (no calibration: these tests time nothing)
    ep = Endpoint(ch, guarded=True, guard=guard)
    hello = ch.recv()
    while hello.get("t") == "req":  # a served module used at import
        ep.dispatch(hello)
        hello = ch.recv()
    assert hello == {"t": "hello"}, hello
    return ep

