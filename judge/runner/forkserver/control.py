"""What the fork server's two halves say to each other: the run request the host
(judge/sandbox/forkserver.py) sends the zygote (zygote.py) on the control socket, once per run,
and the constants both halves read. One definition, so that a field added on one side is read
on the other: the host imports it from judge.runner, the zygote from its copied folder
(standard library only, as the whole of judge_runner is).

The request travels as one JSON object; `RunRequest.decode` refuses one whose fields are not
exactly these, of these types, so a mismatch fails at the zygote's door, not deep in a fork.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

# A fork that failed before the command's first byte exits so, its reason on stderr after the
# prefix: the host then runs the command cold (grading/launch.py).
SETUP_FAILED = 125
SETUP_PREFIX = b"warm-setup: "

# What a fork runs: the runner's main(args) (`python -m judge_runner ARGS`), the proxy's
# submission side (`-m judge_runner.proxy.serve ARGS`), or `python -c CODE ARGS`.
MAINS = ("runner", "serve", "code")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_strs(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(s, str) for s in v)


def _is_pairs(v: Any) -> bool:
    return isinstance(v, list) and all(_is_strs(p) and len(p) == 2 for p in v)


def _is_env(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and isinstance(s, str)
                                       for k, s in v.items())


def _is_rlimits(v: Any) -> bool:
    return isinstance(v, dict) and all(
        k.isdigit() and isinstance(p, list) and len(p) == 2 and all(map(_is_int, p))
        for k, p in v.items())


def _is_main(v: Any) -> bool:
    return v in MAINS


def _field(check):
    return field(metadata={"check": check})


@dataclass(frozen=True)
class RunRequest:
    """One run, as the zygote's fork sets it up (zygote.py's module doc)."""

    main: str = _field(_is_main)                # one of MAINS
    args: list[str] = _field(_is_strs)          # the main's arguments (sys.argv[1:])
    code: str = _field(lambda v: isinstance(v, str))  # main "code": the program, else ""
    env: dict[str, str] = _field(_is_env)       # the run's whole environment
    binds: list[list[str]] = _field(_is_pairs)  # [host path, inside path], read-only
    rw_binds: list[str] = _field(_is_strs)      # writable folders, sent as detached mounts
    scratch: str = _field(lambda v: isinstance(v, str))    # the run's cwd, writable
    host_tmp: str = _field(lambda v: isinstance(v, str))   # the host's temporary folder
    tmp_roots: list[str] = _field(_is_strs)     # Python's trees under /tmp, bound back on it
    warm_paths: list[str] = _field(_is_strs)    # the zygote's own sys.path entries, dropped
    uid: int = _field(_is_int)                  # the run's slot account
    gid: int = _field(_is_int)
    scratch_bytes: int = _field(_is_int)        # its scratch filesystem's size; 0: none
    scratch_files: int = _field(_is_int)        # and its number of files
    tmp_bytes: int = _field(_is_int)            # the size of its /tmp and /dev/shm
    pass_fds: list[int] = _field(lambda v: isinstance(v, list) and all(map(_is_int, v)))
    rlimits: dict[str, list[int]] = _field(_is_rlimits)    # {RLIMIT_* number: [soft, hard]}

    def encode(self) -> bytes:
        return json.dumps(dataclasses.asdict(self)).encode()

    @classmethod
    def decode(cls, data: bytes) -> RunRequest:
        """The request in ``data``, or ValueError naming the first field that is wrong."""
        raw = json.loads(data)
        if not isinstance(raw, dict) or set(raw) != _NAMES:
            got = sorted(raw) if isinstance(raw, dict) else type(raw).__name__
            raise ValueError(f"a run request has the fields {sorted(_NAMES)}, not {got}")
        for f in _FIELDS:
            if not f.metadata["check"](raw[f.name]):
                raise ValueError(f"a run request's {f.name} is {raw[f.name]!r}")
        return cls(**raw)


_FIELDS = dataclasses.fields(RunRequest)
_NAMES = {f.name for f in _FIELDS}
