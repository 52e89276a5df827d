"""How the trusted side waits for an answer (wire.Channel.recv with a spin): it reads without
sleeping for a bounded moment, then blocks, and a peer slow to answer makes it block at once."""

import os
import threading
import time

import numpy as np
import pytest

from judge.runner.proxy import wire
from judge.runner.proxy.wire import Channel, attachment


@pytest.fixture
def pair():
    """A spinning channel and the raw write end of its input (the peer)."""
    r, w = os.pipe()
    sink_r, sink_w = os.pipe()
    yield Channel(r, sink_w, spin_s=wire.SPIN_S), w
    for fd in (r, w, sink_r, sink_w):
        os.close(fd)


def _frames(*msgs) -> bytes:
    """The bytes a peer's Channel writes for `msgs`."""
    (r, w), (idle_r, idle_w) = os.pipe(), os.pipe()
    try:
        peer = Channel(idle_r, w)
        for m in msgs:
            peer.send(m)
        os.set_blocking(r, False)
        return os.read(r, 1 << 20)
    finally:
        for fd in (r, w, idle_r, idle_w):
            os.close(fd)


class Sleeps(list):
    """The channel's calls of select; `then` is written to the peer's end as it goes to sleep
    (so an answer is late for certain, however the machine schedules the test)."""

    def __init__(self):
        super().__init__()
        self.then: list[tuple[int, bytes]] = []


@pytest.fixture
def selects(monkeypatch):
    """How many times the channel went to sleep in select."""
    calls = Sleeps()
    real = wire.select.select

    def counted(*args):
        calls.append(args)
        while calls.then:
            os.write(*calls.then.pop(0))
        return real(*args)
    monkeypatch.setattr(wire.select, "select", counted)
    return calls


def test_a_ready_answer_is_read_without_sleeping(pair, selects):
    ch, w = pair
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    os.write(w, _frames({"t": "res", "id": 1, "v": {"A": wire.encode_array(a)}}))
    m = ch.recv()
    assert m["id"] == 1 and np.array_equal(wire.decode_array(m["v"]["A"]), a)
    assert selects == []
    plain = Channel(ch.fd_in, ch.fd_out)
    os.write(w, _frames({"t": "res", "id": 2}))
    assert plain.recv()["id"] == 2 and len(selects) == 1


def test_a_frame_written_in_parts_arrives_whole(pair):
    ch, w = pair
    data = _frames({"t": "res", "id": 3, "v": {"B": attachment(bytes(range(256)) * 64)}})
    done = threading.Event()

    def dribble():
        for i in range(0, len(data), 1000):
            os.write(w, data[i:i + 1000])
            time.sleep(0.001)  # each part after the spin has given up
        done.set()
    t = threading.Thread(target=dribble)
    t.start()
    m = ch.recv()
    t.join()
    assert done.is_set() and m["id"] == 3
    assert bytes(wire.attached(m["v"]["B"])) == bytes(range(256)) * 64


def test_a_slow_peer_is_waited_for_asleep(pair):
    ch, w = pair
    wait_s = 0.3

    def late():
        time.sleep(wait_s)
        os.write(w, _frames({"t": "res", "id": 4}))
    t = threading.Thread(target=late)
    cpu0, wall0 = time.thread_time(), time.perf_counter()  # before the peer's clock starts
    t.start()
    assert ch.recv()["id"] == 4
    cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
    t.join()
    assert wall >= wait_s
    assert cpu < wait_s / 10, f"{cpu:.3f} s of CPU while waiting {wall:.3f} s"


def test_after_a_miss_the_next_waits_block_at_once(pair, selects):
    ch, w = pair
    selects.then.append((w, _frames({"t": "res", "id": 5})))  # written once the spin gave up
    assert ch.recv()["id"] == 5
    assert len(selects) == 1  # the spin gave up, then slept
    skipped = (1 << 1) - 1
    for i in range(skipped):  # ready answers, read after a select: no spin now
        os.write(w, _frames({"t": "res", "id": 6 + i}))
        ch.recv()
    assert len(selects) == 1 + skipped
    os.write(w, _frames({"t": "res", "id": 9}))
    assert ch.recv()["id"] == 9 and len(selects) == 1 + skipped  # spinning again, a hit
