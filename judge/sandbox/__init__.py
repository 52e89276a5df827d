"""Run untrusted code in a locked-down child process (see docs/SANDBOX.md).

    from judge.sandbox import Limits, run_sandboxed, probe_layers
    result = run_sandboxed([python, "-m", "judge_runner", ...],
                           ro_binds=[(host, inside), ...], scratch=dir, env={...},
                           limits=Limits(wall_s=60, memory_mb=3072), device="cpu")

Layers, each used where it works and always reported in ``result.layers`` (and the absent
ones in ``result.missing_layers``): rlimits; a dedicated unprivileged uid per concurrent run
(as root); bubblewrap (private read-only filesystem view, no network, own pid namespace, no
capabilities, seccomp deny-list) or ``unshare`` as a fallback; cgroup memory/pids limits
(v1 or v2, else RLIMIT_AS) and a CPU quota; a tmpfs of the run's own on the scratch dir
(``Limits.scratch_mb``); sealed grading folders the run's uid is let into (grants); a scrubbed
environment. ``probe_layers().describe()`` says what works here and why, one sentence per
layer.

For callers:

- Paths keep their host paths inside (the scratch dir too: it is *not* moved to /scratch),
  so pass absolute host paths on the command line. A bind to a different inside path works
  only under bwrap.
- Everything mounted or executed must be reachable by an unprivileged uid: world-searchable
  parent dirs (``tempfile.mkdtemp()`` makes 0700 dirs: chmod them 0755), world-readable
  files, or inside a folder sealed with ``grants.seal`` (the run's uid is let in). Otherwise
  ``SandboxError`` says which path. The scratch dir is chowned to the run's uid; use a fresh
  one per run (files an earlier run left belong to another uid). With ``scratch_mb`` set,
  nothing written there is left after the run: report through a pipe (``child_pipe``).
- ``SandboxError``, ``FileNotFoundError`` (bind source missing) and ``ValueError`` (bad
  arguments) are the judge's problems (IE); ``result.setup_error`` set means the wrapper
  itself failed after starting (IE too).
- ``result.stdout``/``stderr`` hold at most ``limits.output_bytes`` together.
"""

from judge.sandbox.layers import Probe, probe_layers
from judge.sandbox.limits import Limits
from judge.sandbox.run import SandboxError, SandboxResult, child_pipe, run_sandboxed

__all__ = ["Limits", "Probe", "SandboxError", "SandboxResult", "child_pipe", "probe_layers",
           "run_sandboxed"]
