"""The grading core's configuration: one object, the only place in `judge/` (the sandboxed
runner aside) that reads the environment.

    from judge.config import settings
    settings().cache_dir, settings().parallel, ...

| variable | field | default |
|---|---|---|
| KVPRACTICE_PROBLEMS | problems_dir | <repo>/problems |
| KVPRACTICE_CACHE | cache_dir | <repo>/.cache |
| JUDGE_PARALLEL | parallel (suites at once; "" or "0": one after the other) | >= 2 CPUs |
| JUDGE_FORCE_CPU | force_cpu (never CUDA, even where there is a GPU) | off |
| JUDGE_KEEP_WORKDIR | keep_workdir (leave grading folders behind, to debug) | off |
| JUDGE_GRADING_PYTHON | grading_python ("3.X": what remote workers run, for the page's CE check) | this Python |
| JUDGE_SANDBOX_BASE_UID | sandbox_base_uid (first of the sandbox's 64 uids) | 61000 |
| CUDA_VISIBLE_DEVICES | cuda_visible_devices (passed on to a CUDA child) | unset |
| JUDGE_WARM | warm (suite runs fork from a warm zygote, grading/warm_pool.py; "0": cold) | on (*) |
| JUDGE_WARM_CUDA | warm_cuda (CUDA runs fork too: a zygote that never touches CUDA, a context per fork) | off (***) |
| JUDGE_SHARDS | shards (the hidden suite as at most N runs at once, grading/shards.py; "1": one run) | auto (**) |
| JUDGE_PREWARM | prewarm (`judge serve` starts its bank's zygotes at start-up; "0": each on its first grading) | on |

(*) where many files are graded: serve's workers, worker, check, --mutate; a one-off grade is cold.
(**) the cores per grading slot where runs are warm, else 1.
(***) not yet measured on a GPU (benchmarks/gpu_checks.sh step 7 does): CUDA runs stay cold.

The object is built once and rebuilt only when one of these variables changes (a test's
monkeypatch, a front end that sets one before grading), so every reader sees the same values.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent

ENV_NAMES = ("KVPRACTICE_PROBLEMS", "KVPRACTICE_CACHE", "JUDGE_PARALLEL", "JUDGE_FORCE_CPU",
             "JUDGE_KEEP_WORKDIR", "JUDGE_GRADING_PYTHON", "JUDGE_SANDBOX_BASE_UID",
             "CUDA_VISIBLE_DEVICES", "JUDGE_WARM", "JUDGE_SHARDS", "JUDGE_WARM_CUDA",
             "JUDGE_PREWARM")


@dataclass(frozen=True)
class JudgeSettings:
    problems_dir: Path
    cache_dir: Path
    parallel: bool
    force_cpu: bool
    keep_workdir: bool
    grading_python: str
    sandbox_base_uid: int
    cuda_visible_devices: str | None
    warm: bool | None = None  # None: the process's own default (warm_pool.use_by_default)
    shards: int | None = None  # None: auto (grading/shards.py)
    warm_cuda: bool = False
    prewarm: bool = True

    @classmethod
    def from_env(cls, env: dict[str, str]) -> JudgeSettings:
        named = env.get("JUDGE_GRADING_PYTHON", "").strip()
        parallel = env.get("JUDGE_PARALLEL")
        return cls(
            problems_dir=Path(env.get("KVPRACTICE_PROBLEMS") or REPO_ROOT / "problems"),
            cache_dir=Path(env.get("KVPRACTICE_CACHE") or REPO_ROOT / ".cache"),
            parallel=(parallel not in ("", "0")) if parallel is not None
            else (os.cpu_count() or 1) >= 2,
            force_cpu=bool(env.get("JUDGE_FORCE_CPU")),
            keep_workdir=bool(env.get("JUDGE_KEEP_WORKDIR")),
            grading_python=named if re.fullmatch(r"3\.\d{1,2}", named)
            else f"{sys.version_info[0]}.{sys.version_info[1]}",
            sandbox_base_uid=int(env.get("JUDGE_SANDBOX_BASE_UID") or 61000),
            cuda_visible_devices=env.get("CUDA_VISIBLE_DEVICES") or None,
            warm=(env["JUDGE_WARM"] not in ("", "0")) if "JUDGE_WARM" in env else None,
            shards=_shards(env.get("JUDGE_SHARDS")),
            warm_cuda=env.get("JUDGE_WARM_CUDA", "") not in ("", "0"),
            prewarm=env.get("JUDGE_PREWARM", "1") not in ("", "0"),
        )


def _shards(value: str | None) -> int | None:
    value = (value or "").strip().lower()
    if value in ("", "auto") or not value.isdigit():
        return None
    return max(1, int(value))


_current: tuple[tuple, JudgeSettings] | None = None


def settings() -> JudgeSettings:
    """The configuration for the environment as it is now."""
    global _current
    key = tuple(os.environ.get(name) for name in ENV_NAMES)
    if _current is None or _current[0] != key:
        _current = (key, JudgeSettings.from_env({n: v for n, v in zip(ENV_NAMES, key)
                                                 if v is not None}))
    return _current[1]
