"""What this machine is: device, interpreter and library versions (for provenance and for the
reference cache key). Cheap: torch is imported only where an NVIDIA device node exists."""

from __future__ import annotations

import glob
import importlib.metadata
import os
import platform
import re
import sys
from functools import lru_cache

from judge import JUDGE_VERSION  # noqa: E402  (one place)
from judge.config import settings


def python_version() -> str:
    return platform.python_version()


GRADING_PYTHON_ENV = "JUDGE_GRADING_PYTHON"


def grading_python() -> str:
    """"3.11": the Python whose grammar judges submissions, for front ends that check code
    before it is submitted (the page runs Pyodide's newer Python and parses the student's file
    with this version's grammar, so Run shows the CE that Submit would).

    Graders run submissions on their own interpreter (suite_run starts sys.executable), so the
    default is this one. A server whose submissions are graded by remote workers on another
    Python says so with JUDGE_GRADING_PYTHON=3.X; nothing else reads it."""
    return settings().grading_python


@lru_cache(maxsize=None)
def torch_version() -> str | None:
    mod = sys.modules.get("torch")
    if mod is not None:
        return str(mod.__version__)
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return None


def _nvidia_nodes() -> bool:
    return os.path.exists("/dev/nvidiactl") or bool(glob.glob("/dev/nvidia[0-9]*"))


@lru_cache(maxsize=None)
def cuda_available() -> bool:
    """torch.cuda.is_available(), without importing torch where there is no NVIDIA device."""
    if settings().force_cpu:
        return False
    if not _nvidia_nodes() or torch_version() is None:
        return False
    try:
        import torch
        return bool(torch.cuda.is_available())
    except Exception:
        return False


def resolve_device(device: str) -> str:
    if device == "auto":
        return "cuda" if cuda_available() else "cpu"
    if device not in ("cpu", "cuda"):
        raise ValueError(f"device must be auto, cpu or cuda, not {device!r}")
    if device == "cuda" and not cuda_available():
        raise ValueError("device cuda was asked for, but no CUDA device is available here")
    return device


def gpu_name() -> str | None:
    if not cuda_available():
        return None
    try:
        import torch
        return str(torch.cuda.get_device_name(0))
    except Exception:
        return None


def cache_tag(device: str) -> str:
    """`<device>-<python>-<torch>`, safe as part of a file name."""
    tag = f"{device}-{python_version()}-{torch_version() or 'notorch'}"
    return re.sub(r"[^A-Za-z0-9._+-]", "_", tag)


def doctor_info() -> dict:
    """What this machine can run: interpreter, torch, device, and the sandbox's layers."""
    from judge.sandbox import probe_layers

    probe = probe_layers()
    return {"python": python_version(), "executable": sys.executable,
            "torch": torch_version(), "device": "cuda" if cuda_available() else "cpu",
            "gpu_name": gpu_name(), "sandbox_mode": probe.mode,
            "layers": dict(probe.items()), "missing": list(probe.missing),
            "judge_version": JUDGE_VERSION, "compilers": _compilers()}


def _compilers() -> list[dict]:
    """The C++ compilers and sanitizers found here (judge/grading/cpp/toolchain.py)."""
    from judge.grading.cpp import toolchain

    return [{"name": name, "found": found, "for": use} for name, found, use in
            toolchain.describe()]
