"""A problem's last `judge check`, kept in its own folder (PROOF_NAME) by whoever ran it: the
command line or the web's instructor page. The folder is what both share (the web's data
directory is unknown to the command line), so a check run in a terminal shows on /instructor,
and a draft (problem.toml `draft = true`, what `judge new` writes) that passed one has proved
itself and is published. The file is left out of the problem's version (judge.problem.folder),
so writing it changes no verdict and no cache key."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

PROOF_NAME = ".judge-check.json"
# A proof is a few rows per known submission; anything much larger is not one of ours.
MAX_PROOF_BYTES = 1 << 20


def proof_path(problem) -> Path:
    return Path(problem.path) / PROOF_NAME


def record(problem, result, started: float, by: str) -> dict:
    """The check's outcome as the instructor page shows it, written beside the problem (a
    read-only folder keeps none: the check itself still stands). Returns what was written."""
    out = {"state": "done", "by": by, "started_at": started,
           "seconds": round(time.time() - started, 1), "version": _version(problem),
           "ok": bool(result.ok), "errors": list(result.errors),
           "warnings": list(result.warnings),
           "table": [{k: v for k, v in row.items() if k != "tests"} for row in result.table()]}
    write(problem, out)
    return out


def write(problem, data: dict) -> None:
    path = proof_path(problem)
    tmp = path.with_name(f"{PROOF_NAME}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(data, default=str), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)


def read(problem) -> dict | None:
    """The last check written beside the problem, or None."""
    path = proof_path(problem)
    try:
        if path.stat().st_size > MAX_PROOF_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("state") == "done" else None


def _version(problem) -> str | None:
    try:
        return problem.version
    except Exception:  # a problem that does not load has no version: its check failed anyway
        return None
