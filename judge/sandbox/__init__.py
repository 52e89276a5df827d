"""Run untrusted code in a locked-down child process (see docs/ARCHITECTURE.md, section 5).

    from judge.sandbox import Limits, run_sandboxed, probe_layers
    result = run_sandboxed([python, "-m", "judge_runner", ...], scratch=dir,
                           ro_binds=[(host, inside)], env={...}, limits=Limits(...))

Layers, each used where it works and always reported in ``result.layers``: rlimits, a
dedicated uid (as root), bubblewrap (private filesystem view, no network, own pid namespace)
or ``unshare`` as a fallback, cgroup memory/pids limits (v1 or v2), a scrubbed environment.
"""

from .layers import Probe, probe_layers
from .limits import Limits
from .run import SandboxError, SandboxResult, run_sandboxed

__all__ = ["Limits", "Probe", "SandboxError", "SandboxResult", "probe_layers",
           "run_sandboxed"]
