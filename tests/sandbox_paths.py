"""Runs a sandbox test on both paths: `cold` (run_sandboxed: bwrap per run) and `warm` (a fork
of a warm zygote, judge/sandbox/forkserver.py). A test module opts in with

    pytestmark = pytest.mark.usefixtures("sandbox_path")

On the warm path, `run_sandboxed` in the test's module runs its command through a zygote
(it must then have run warm: a silent fallback to the cold path would test nothing new), and
every grading in the test is graded warm (grading/warm_pool.py), with no run falling back.
"""

from __future__ import annotations

import pytest

from judge.grading import warm_pool
from judge.sandbox import forkserver
from judge.sandbox import run_sandboxed as cold_run

_generic: list[forkserver.ForkServer] = []


def _server() -> forkserver.ForkServer:
    if not _generic or not _generic[0].alive():
        _generic[:] = [warm_pool.start_server()]
    return _generic[0]


def _warm_run(argv, ro_binds=(), scratch=None, env=None, limits=None, device="cpu", *,
              isolation="auto", monitor=None, pass_fds=(), readers=None, rw_binds=()):
    if isolation != "auto" or device != "cpu":  # a test of another mechanism
        return cold_run(argv, ro_binds, scratch, env, limits, device, isolation=isolation,
                        monitor=monitor, pass_fds=pass_fds, readers=readers,
                        rw_binds=rw_binds)
    try:
        res = _server().run(argv, ro_binds=ro_binds, scratch=scratch, env=env, limits=limits,
                            device=device, monitor=monitor, pass_fds=pass_fds,
                            readers=readers, rw_binds=rw_binds)
    except forkserver.WarmUnavailable as exc:
        if str(exc) != forkserver.BIND_ELSEWHERE:
            raise
        return cold_run(argv, ro_binds, scratch, env, limits, device, monitor=monitor,
                        pass_fds=pass_fds, readers=readers, rw_binds=rw_binds)
    assert res.layers.get("grader_path") == "warm"
    return res


@pytest.fixture(params=["cold", "warm"])
def sandbox_path(request, monkeypatch):
    if request.param == "cold":
        with warm_pool.forced(False):
            yield "cold"
        return
    ok, why = forkserver.warm_possible()
    if not ok:
        pytest.skip(f"no warm path here: {why}")
    if hasattr(request.module, "run_sandboxed"):
        monkeypatch.setattr(request.module, "run_sandboxed", _warm_run)
    # a test that takes bwrap away (the unshare fallback) checks that asking for warm
    # grading there still grades, cold; everywhere else warm must mean warm
    cold_by_design = "unshare_only" in request.fixturenames
    before = warm_pool.fallbacks()
    with warm_pool.forced(True):
        yield "warm"
    if not cold_by_design:
        assert warm_pool.fallbacks() == before, "a run meant to be warm ran cold"
