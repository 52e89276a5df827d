"""A test's object's plain attributes travel with its handle (rpc/snapshots.py): the submission
reads them without a request while nothing of the tests' can have run, and asks otherwise, so
every read gives what one process gives."""

from __future__ import annotations

import threading

import pytest

from judge.runner import own_threads
from judge.runner.proxy import snapshots
from judge.runner.proxy.wire import WireError

KERNEL = '''
def kernel(t):
    return t.block_idx * t.block_dim + t.thread_idx

def twice(t):
    first = t.count
    t.bump()
    return first, t.count

def shaded(o):
    return o.x, o.y, o.z

def named(t):
    return t.flag, t.none, t.name, t.big
'''


class Thread:
    def __init__(self, b, i, d):
        self.block_idx, self.thread_idx, self.block_dim = b, i, d


class Counter:
    def __init__(self):
        self.count = 0

    def bump(self):
        self.count += 1


class Shaded:
    x = "class"  # a class attribute of the same name: left to getattr's own rules
    z = property(lambda self: self._z * 2)

    def __init__(self):
        self.x, self.y, self._z = "own", [1], 21


class Plain:
    def __init__(self):
        self.name, self.flag, self.none, self.big = "n" * 300, True, None, 10 ** 30


@pytest.fixture
def alone():
    """The snapshot is sent only while the tests' process runs no thread but the runner's own
    (own_threads.py): threads other tests of this session left behind (a grader's pumps, which
    touch no object of these tests) count as such here."""
    left = [t for t in threading.enumerate() if t is not threading.current_thread()]
    for t in left:
        own_threads.runner_thread(t)
    yield
    for t in left:
        own_threads._RUNNER.discard(t)


def _count_served(ep) -> list:
    served: list = []
    serve = ep._serve

    def counting(m):
        args = m.get("args") or [None]
        served.append(m.get("op") if m.get("op") != "getattr" else f"getattr {args[0]}")
        return serve(m)

    ep._serve = counting
    return served


def test_a_kernel_reads_its_thread_without_a_request(served_endpoint, alone):
    ep = served_endpoint(KERNEL)
    kernel = ep.request("import", None, "kernel")
    served = _count_served(ep)
    assert [kernel(Thread(b, i, 4)) for b in range(2) for i in range(4)] == list(range(8))
    assert served == []  # three requests a thread before


def test_a_read_after_the_tests_code_ran_asks_again(served_endpoint, alone):
    ep = served_endpoint(KERNEL)
    served = _count_served(ep)
    c = Counter()
    assert ep.request("import", None, "twice")(c) == (0, 1)
    # the first `count` from the snapshot; after `bump` ran the tests' code, asked
    assert served.count("getattr count") == 1 and served[-1] == "getattr count"


def test_only_what_getattr_reads_from_the_instance_is_sent(served_endpoint, alone):
    ep = served_endpoint(KERNEL)
    served = _count_served(ep)
    assert tuple(ep.request("import", None, "shaded")(Shaded())) == ("own", [1], 42)
    # a class attribute, a list, a property: asked
    assert served == ["getattr x", "getattr y", "getattr z"]
    served.clear()
    assert tuple(ep.request("import", None, "named")(Plain())) == (True, None, "n" * 300,
                                                                   10 ** 30)
    assert served == ["getattr name", "getattr big"]  # the long str and the big int: asked


def test_no_snapshot_while_another_thread_of_the_tests_runs(served_endpoint):
    ep = served_endpoint(KERNEL)
    kernel = ep.request("import", None, "kernel")
    served = _count_served(ep)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert kernel(Thread(1, 2, 4)) == 6
    finally:
        stop.set()
        other.join()
    assert served == ["getattr block_idx", "getattr block_dim", "getattr thread_idx"]


def test_a_snapshot_from_the_submission_or_malformed_is_refused(served_endpoint):
    ep = served_endpoint(KERNEL)
    with pytest.raises(WireError):
        ep.decode({"R": 9, "k": "", "n": "C", "v": [["a", 1]]})
    for bad in ([["_a", 1]], [["a", [1]]], [["a b", 1]], {"a": 1}, [["a", 1]] * 17):
        with pytest.raises(WireError):
            snapshots.decode(bad)

