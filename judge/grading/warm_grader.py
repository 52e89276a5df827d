"""The grading core for a long-lived grading process (a remote worker): one device, the
reference stack kept warm.

    grader = WarmGrader("auto"); grader.warm(ProblemBank())
    report_dict = grader(problem, source, on_event)

`warm` imports torch once (and initialises CUDA on a GPU worker) and computes or loads the
reference observations of every problem for this device, so the first student does not pay
for them; the reference files are then kept in memory (`ReferenceCache(in_memory=True)`: read
again only when they change on disk). Each grading still runs the submission in a fresh
sandboxed child: a fork of the problem's warm zygote (grading/warm_pool.py; JUDGE_WARM=0 for
a cold one), which `warm` starts for every problem too.
"""

from __future__ import annotations

import time

from judge.grading import warm_pool
from judge.grading.environment import gpu_name, resolve_device
from judge.grading.reference_cache import ReferenceCache, get_reference
from judge.problem import SUITES, Problem


class WarmGrader:
    def __init__(self, device: str = "auto"):
        self.device = resolve_device(device)  # ValueError: "cuda" without a CUDA device
        self.gpu_name = gpu_name() if self.device == "cuda" else None
        self.cache = ReferenceCache(in_memory=True)

    def warm(self, bank, log=None) -> dict[str, str]:
        """Prepare every problem of `bank` (a ProblemBank); {problem id: "ok" or why not}."""
        t0 = time.perf_counter()
        import torch  # noqa: F401  (once, in this long-lived process)
        if self.device == "cuda":
            torch.cuda.init()
        out = {}
        for p in bank.list():
            if "cuda" in p.requires and self.device != "cuda":
                out[p.id] = "needs a CUDA device"
                continue
            try:
                get_reference(p, list(SUITES), self.device, cache=self.cache)
                out[p.id] = "ok"
            except Exception as exc:
                out[p.id] = f"{type(exc).__name__}: {exc}"
                continue
            if self.device == "cpu" and warm_pool.enabled():
                # the first student's runs fork from it instead of starting Python
                out[p.id] += "; warm grader " + ("started" if warm_pool.server_for(p)
                                                 else "unavailable: runs are cold")
        if log is not None:
            log.info("reference stack warm on %s in %.1f s: %s", self.device,
                     time.perf_counter() - t0, out)
        return out

    def __call__(self, problem: Problem, source: str, on_event) -> dict:
        """The Report of `source` on every suite, as JSON data (a web grader's contract)."""
        from judge.grading.grader import grade

        return grade(problem, source, suite="all", device=self.device, on_event=on_event,
                     cache=self.cache).to_dict()
