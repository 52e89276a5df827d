"""Concurrent requests from the trusted side's threads (endpoint.py): a second channel on which
each message names its stream.

    trusted side                                   submission side
    main thread  --- first channel (unchanged) ---  main thread (event loop)
    thread A  \\                                  /  worker of stream 1 (made on demand)
    thread B  --- second channel, {"s": n} ------  worker of stream 2
                  read by one thread each side: it hands each message to its stream's inbox

A thread of the tests takes a stream when it first calls the submission (a free one, left by a
thread that ended, or a new one, at most `cap`); its requests, and the answers to them, carry the
stream's number. The submission side serves each stream on a thread of its own, so a `get()`
blocked until another test thread's `put()` does not stop that `put()` being served. A request
the submission makes while serving one (a callback) goes out on the same stream, and the test's
thread that waits for that stream's answer serves it, as one thread does in one process.

What crosses is what crosses on the first channel; the guard of the trusted side is the same
`_serve`. The submission can only answer on a stream the trusted side opened (anything else is
`WireError`); the trusted side's threads are its own, so the streams they open need no check
beyond the cap on the submission side's workers (threads count against the sandbox's limit on
processes).
"""

from __future__ import annotations

import collections
import queue
import sys
import threading

from .protocol import check_message
from .wire import Channel, PeerGone, WireError

_GONE = object()


class Stream:
    __slots__ = ("id", "inbox", "owner")

    def __init__(self, sid: int, owner: Streams | None = None):
        self.id = sid
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.owner = owner


class _Ticket:
    """Kept in the thread's locals: when the thread ends, its stream is free for another, so the
    submission side's workers are bounded by the tests' threads alive at once, not made."""

    __slots__ = ("free", "stream")

    def __init__(self, free: list, stream: Stream):
        self.free, self.stream = free, stream

    def __del__(self):
        self.free.append(self.stream)
        owner = self.stream.owner
        if owner is not None and owner.turn_of is self.stream:
            owner.turn.set()  # an ended thread gives its turn back


class Streams:
    def __init__(self, ep, channel: Channel, cap: int):
        self.ep, self.ch, self.cap = ep, channel, cap
        self.send_lock = threading.Lock()
        self.out: collections.deque = collections.deque()
        self.lock = threading.Lock()
        self.by_id: dict[int, Stream] = {}
        self.free: list[Stream] = []
        self.reader: threading.Thread | None = None
        self.gone: WireError | None = None
        # the trusted side's turns: see `_read`
        self.turn = threading.Event()
        self.turn_of: Stream | None = None

    # ---- the trusted side: a stream per thread ----------------------------------------------

    def mine(self) -> Stream | None:
        """The calling thread's stream, taken now (the trusted side; the submission's own
        threads keep the first channel, as before)."""
        if not self.ep.guarded:
            return None
        with self.lock:
            if self.free:
                s = self.free.pop()
            else:
                if len(self.by_id) >= self.cap:
                    raise RuntimeError(f"more than {self.cap} threads of the tests call the "
                                       "submission at once")
                s = Stream(len(self.by_id) + 1, self)
                self.by_id[s.id] = s
            self.start()
        self.ep.tl.s = s
        self.ep.tl.ticket = _Ticket(self.free, s)
        return s

    def start(self) -> None:
        if self.reader is None:
            self.reader = threading.Thread(target=self._read, name="proxy-streams", daemon=True)
            self.reader.start()

    # ---- both sides ---------------------------------------------------------------------------

    def send(self, s: Stream, msg: dict) -> None:
        """Frames leave in the order their threads got here, not in the order the threads
        win the lock (a lock is not fair): two consumers whose `get()`s returned one after the
        other are answered in that order, as their calls returned in one process."""
        msg["s"] = s.id
        self.out.append(msg)
        with self.send_lock:  # whole frames: several threads write this channel
            while self.out:
                self.ch.send(self.out.popleft())
        if self.turn_of is s:
            self.turn.set()

    def request(self, s: Stream, n: int, msg: dict) -> dict:
        """Sends request `n` on `s`; serves the peer's nested requests on `s` until its answer."""
        self.send(s, msg)
        while True:
            m = s.inbox.get()
            if m is _GONE:
                raise self.gone or PeerGone("the other process has gone")
            if m.get("t") == "res":
                if m.get("id") != n:
                    raise WireError("an answer to a question not asked")
                return m
            self.ep._serve(m)

    def _read(self) -> None:
        try:
            while True:
                m = self.ch.recv()
                t = check_message(m, self.ep.side)
                sid = m.get("s")
                if type(sid) is not int or t not in ("req", "res"):
                    raise WireError("a message on the streams' channel without its stream")
                s = self.by_id.get(sid)
                if s is None:
                    if self.ep.guarded or t != "req":
                        raise WireError("a message on a stream this side never opened")
                    s = self._worker(sid)
                if self.ep.guarded:
                    self._give_turn(s, m)
                else:
                    s.inbox.put(m)
        except WireError as e:  # PeerGone too
            self._lost(e)

    def _give_turn(self, s: Stream, m: dict) -> None:
        """In one process, a thread that returns from a call of the submission's runs on
        until it blocks or the interpreter switches threads (every `getswitchinterval()`):
        consumers that each take an item and then append it to a shared list append in the
        order they took them. Here each answer wakes its thread from a queue, and threads
        woken together run in any order. So the next message goes to another stream only
        once this one's thread has sent its next one, ended, or had its switch interval (a
        thread that blocks on something of the test's own loses that much, never more)."""
        self.turn.clear()
        self.turn_of = s
        s.inbox.put(m)
        self.turn.wait(sys.getswitchinterval())
        self.turn_of = None

    def _lost(self, e: WireError) -> None:
        self.gone = e
        for s in list(self.by_id.values()):
            s.inbox.put(_GONE)
        self.ep.lost(e)

    # ---- the submission side: a worker per stream ----------------------------------------

    def _worker(self, sid: int) -> Stream:
        with self.lock:
            if len(self.by_id) >= self.cap:
                raise WireError(f"more than {self.cap} streams")
            s = Stream(sid)
            self.by_id[sid] = s
        threading.Thread(target=self._serve_stream, args=(s,), name=f"proxy-stream-{sid}",
                         daemon=True).start()
        return s

    def _serve_stream(self, s: Stream) -> None:
        self.ep.tl.s = s
        try:
            while True:
                m = s.inbox.get()
                if m is _GONE:
                    return
                if m.get("t") != "req":
                    raise WireError("an answer to a question not asked")
                self.ep._serve(m)
        except WireError as e:
            self._lost(e)
        except BaseException as e:  # noqa: BLE001  the submission's thread cannot go on
            self._lost(WireError(f"a stream's worker ended: {type(e).__name__}"))
