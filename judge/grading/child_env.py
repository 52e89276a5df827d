"""The environment of a suite run's sandboxed process: the one-process runner's, the trusted
test process's and the submission's process's of an imported problem (launch.py, proxied.py),
and the mutation tool's line run (authoring/mutation/lines.py). A module of its own: the
launcher and the proxy's wiring both need it, and neither may import the other's caller.
"""

from __future__ import annotations

import os
from pathlib import Path

from judge.config import settings
from judge.grading.workdir import View
from judge.runner.install_step import ENV as INSTALL_ENV
from judge.runner.proxy.capabilities import HANDBOOK_DIR_ENV


def child_env(problem, view: View, sub_dir: Path, device: str) -> dict[str, str]:
    """`sub_dir` first on the path: the submission's folder (or, for the trusted side of an
    imported problem, which never mounts it, the handbook's)."""
    path = os.pathsep.join([str(sub_dir), str(view.handbook), str(view.runner_parent)])
    env = {
        "PYTHONPATH": path, "JUDGE_DEVICE": device, "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "PYTHONNOUSERSITE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "MALLOC_ARENA_MAX": "2", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
        "PATH": "/usr/local/bin:/usr/bin:/bin", HANDBOOK_DIR_ENV: str(view.handbook),
    }
    # A GPU worker pinned to one GPU (one worker per GPU) pins its children to the same one.
    visible = settings().cuda_visible_devices
    if device == "cuda" and visible:
        env["CUDA_VISIBLE_DEVICES"] = visible
    install = getattr(getattr(problem.config, "handbook", None), "install", None)
    if install:  # both processes of an imported problem call these first (runner/install_step.py)
        env[INSTALL_ENV] = ",".join(install)
    return env
