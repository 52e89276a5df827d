"""The units `make test` shares out to its two xdist workers (tests/work_units.py) name files that
exist, and its queue gives the longest units out first. A renamed module left in LONGEST_FIRST
would silently lose its place (the run stays correct, only slower): this says which."""

from __future__ import annotations

from paths import REPO
from work_units import LONGEST_FIRST, SHARED_UNITS, _LongestFirst, unit_of


def test_every_unit_named_is_a_module_or_a_shared_unit():
    for prefix in SHARED_UNITS:
        assert (REPO / prefix).exists(), prefix
    shared = set(SHARED_UNITS.values())
    stale = [u for u in LONGEST_FIRST if u not in shared and not (REPO / u).is_file()]
    assert stale == []


def test_shared_modules_are_one_unit_and_the_rest_their_module():
    assert unit_of("tests/e2e/test_browser.py::test_solve_in_the_browser") == "tests/e2e"
    assert unit_of("tests/grading/test_hidden_shards.py::t[spin]") == "known_gradings"
    assert unit_of("tests/authoring/test_bank_proves_itself.py::t[143]") == "known_gradings"
    assert unit_of("tests/cli/test_serve_prewarm.py::t") == "tests/cli/test_serve_prewarm.py"


def test_the_queue_gives_the_longest_first_then_the_others_in_order():
    queue = _LongestFirst()
    for unit in ("tests/a.py", "known_gradings", "tests/b.py", "tests/e2e"):
        queue[unit] = {unit + "::t": False}
    order = [queue.popitem(last=False)[0] for _ in range(4)]
    assert order == ["tests/e2e", "known_gradings", "tests/a.py", "tests/b.py"]
