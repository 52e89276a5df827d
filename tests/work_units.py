"""The units of work `make test` shares out to its two xdist workers (pytest -n 2), and the order
they go out in. tests/conftest.py installs the scheduler as xdist's hook.
"""

from __future__ import annotations

from collections import OrderedDict

import pytest

# `make test` runs the suite on two xdist workers (pytest -n 2), a unit of work being one test
# module, except where tests share what is made once per process: tests/e2e's one server and
# Chromium (package-scope fixtures), and the known gradings (tests/known_gradings.py: the bank's
# proof reads the gradings the warm, shard and 143 tests make). xdist's own `--dist loadgroup`
# cannot say so under pytest 9.2 (it renames `item._nodeid`, which pytest 9.2 no longer reads:
# every test became its own group), hence a scheduler of our own.
SHARED_UNITS = {
    "tests/e2e/": "tests/e2e",
    "tests/authoring/test_bank_proves_itself.py": "known_gradings",
    "tests/grading/test_warm_same_verdicts.py": "known_gradings",
    "tests/grading/test_problem143_grading.py": "known_gradings",
    "tests/grading/test_hidden_shards.py": "known_gradings",
}


# The longest units go out first, so that the two workers end together (xdist's own order is by
# number of tests, which put the known gradings, 4 modules of few and long tests, near the end).
# Wall seconds of a serial run beside a CPU hog (2-core box); only the order is taken from them.
LONGEST_FIRST = (
    "tests/e2e",                                     # 339 s
    "known_gradings",                                # 231
    "tests/grading/test_imported_warm.py",           # 84
    "tests/grading/test_cpu_time_limits.py",         # 78
    "tests/project/test_benchmarks.py",              # 76
    "tests/grading/test_imported_shared.py",         # 76
    "tests/grading/test_grade_end_to_end.py",        # 75
    "tests/web_platform/test_distributed_burst.py",  # 71
    "tests/grading/test_cpp_grading.py",             # 56
    "tests/project/test_offline_setup.py",           # 55
    "tests/web_platform/test_distributed_flow.py",   # 54
    "tests/web_platform/test_distributed_faults.py", # 49
    "tests/grading/test_imported_grading.py",        # 46
    "tests/runner/test_proxy_capabilities.py",       # 45
)
_RANK = {unit: i for i, unit in enumerate(LONGEST_FIRST)}


def unit_of(nodeid: str) -> str:
    module = nodeid.split("::", 1)[0]
    for prefix, unit in SHARED_UNITS.items():
        if module.startswith(prefix):
            return unit
    return module


class _LongestFirst(OrderedDict):
    """xdist's queue of units, giving out the earliest of LONGEST_FIRST before the others (in
    xdist's order); popitem(last=False) is the only way xdist takes a unit from it."""

    def popitem(self, last: bool = True):
        if last or not self:
            return super().popitem(last)
        unit = min(self, key=lambda u: _RANK.get(u, len(_RANK)))
        return unit, self.pop(unit)


@pytest.hookimpl(optionalhook=True)
def make_scheduler(config, log):
    """pytest_xdist_make_scheduler (tests/conftest.py names it so)."""
    from xdist.scheduler import LoadScopeScheduling

    class SharedUnitScheduling(LoadScopeScheduling):
        def __init__(self, config, log=None):
            super().__init__(config, log)
            self.workqueue = _LongestFirst()

        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return SharedUnitScheduling(config, log)
