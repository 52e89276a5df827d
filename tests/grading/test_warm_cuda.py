"""Issue 19's GPU item: CUDA runs fork from a zygote of their own (JUDGE_WARM_CUDA=1). CUDA does
not survive fork, so that zygote never touches CUDA and each fork makes the context its run
keeps; a zygote whose preload touched CUDA is refused. What can be checked without a GPU is
checked here: a warm CUDA fork sees what a cold CUDA run sees (device nodes, /sys, no address
space limit) and runs only where asked. The GPU itself: benchmarks/gpu_checks.sh, step 7.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from judge.grading import warm_pool
from judge.runner.forkserver.zygote import cuda_touched
from judge.sandbox import Limits, run_sandboxed
from judge.sandbox.bwrap import CUDA_SYS
from judge.sandbox.forkserver import WarmUnavailable, warm_possible

pytestmark = pytest.mark.skipif(not warm_possible()[0], reason=str(warm_possible()[1]))

VIEW = (
    "import os, json\n"
    "limits = [l for l in open('/proc/self/limits') if l.startswith('Max address space')]\n"
    "print(json.dumps([sorted(os.listdir('/dev')), [os.path.exists(p) for p in %r],\n"
    "                  limits[0].split()[3], os.environ.get('JUDGE_DEVICE')]))\n" % (CUDA_SYS,))
LIMITS = Limits(wall_s=30, cpu_s=30, scratch_mb=8, scratch_files=100)


@pytest.fixture(scope="module")
def cuda_server():
    s = warm_pool.start_server(device="cuda")
    yield s
    s.close()


def _view(res):
    assert res.returncode == 0, res.stderr
    return res.stdout.decode()


def test_a_warm_cuda_fork_sees_what_a_cold_cuda_run_sees(cuda_server, scratch):
    argv = [sys.executable, "-c", VIEW]
    env = {"JUDGE_DEVICE": "cuda"}
    warm = cuda_server.run(argv, scratch=scratch, env=env, limits=LIMITS, device="cuda")
    cold = run_sandboxed(argv, scratch=scratch, env=env, limits=LIMITS, device="cuda")
    seen = _view(warm)
    assert seen == _view(cold)
    devs, _, address_space, device = json.loads(seen)
    assert address_space == "unlimited" and device == "cuda"  # CUDA reserves huge ranges
    assert [d for d in os.listdir("/dev") if d.startswith("nvidia")] == \
        [d for d in devs if d.startswith("nvidia")]
    assert warm.layers["grader_path"] == "warm" and warm.layers["device"] == "cuda"
    assert warm.layers["memory_limit"] == cold.layers["memory_limit"]


def test_a_zygote_forks_runs_of_its_own_device_only(cuda_server, scratch):
    argv = [sys.executable, "-c", "print(1)"]
    with pytest.raises(WarmUnavailable, match="forks cuda runs"):
        cuda_server.run(argv, scratch=scratch, limits=LIMITS, device="cpu")
    cpu = warm_pool.start_server()
    try:
        with pytest.raises(WarmUnavailable, match="forks cpu runs"):
            cpu.run(argv, scratch=scratch, limits=LIMITS, device="cuda")
        assert cpu.run(argv, scratch=scratch, limits=LIMITS).stdout == b"1\n"
    finally:
        cpu.close()


def test_a_zygote_whose_preload_touched_cuda_is_refused_for_cuda_runs(tmp_path: Path):
    # Without a GPU nothing can initialize CUDA: the module reports it did, as torch would.
    (tmp_path / "touches_cuda.py").write_text(
        "import torch\ntorch.cuda.is_initialized = lambda: True\n")
    assert cuda_touched() == ""  # this process never touched CUDA
    with pytest.raises(WarmUnavailable, match="touched CUDA"):
        warm_pool.start_server([tmp_path / "touches_cuda.py"], device="cuda")
    cpu = warm_pool.start_server([tmp_path / "touches_cuda.py"])  # CPU forks need no CUDA
    try:
        assert cpu.preloaded.get("touches_cuda") == "ok"
    finally:
        cpu.close()


def test_cuda_runs_fork_only_where_asked(problem, monkeypatch):
    with warm_pool.forced(True):
        monkeypatch.delenv("JUDGE_WARM_CUDA", raising=False)
        assert warm_pool.spawner(problem, "cuda", run_sandboxed) is run_sandboxed
        monkeypatch.setenv("JUDGE_WARM_CUDA", "1")
        try:
            assert warm_pool.spawner(problem, "cuda", run_sandboxed) is not run_sandboxed
            cuda = warm_pool.server_for(problem, "cuda")
            cpu = warm_pool.server_for(problem, "cpu")
            assert cuda is not None and cpu is not None and cuda is not cpu
            assert (cuda.device, cpu.device) == ("cuda", "cpu")
        finally:
            warm_pool.close_all()
