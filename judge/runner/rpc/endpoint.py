"""One side of the call proxy over one Channel: requests and their answers, the peer's nested
requests served while an answer is awaited, and `await` across both event loops.

The trusted side's main thread talks over the first channel, one request at a time, nested on
one stack, exactly as before (the fast path). Its other threads (a test's producers and
consumers) each get a stream of their own on a second channel (streams.py): their requests carry
the stream's number, the submission side serves each stream on a thread of its own, and a
nested request (the submission calling back a function of the test) travels on the stream of
the call it is nested in, so it is served by the thread that waits for that call."""

from __future__ import annotations

import asyncio
import functools
import itertools
import threading
from typing import Callable

from ..wire import Channel, PeerGone, WireError
from .borrowed import Borrowed
from .codec import Codec, _awaited, lent_object
from .inplace import apply_back, changed, containers, encode_back, put_value, snapshot
from .operations import is_held, is_lent, perform
from .streams import Streams

_PLAIN_ARG = (int, float, str, bool, type(None))


class Endpoint(Codec):
    def __init__(self, channel: Channel, *, guarded: bool, loop=None):
        super().__init__(guarded)
        self.ch = channel
        self.loop = loop
        self.ids = itertools.count(1)
        self.waiting: list[int] = []
        self.futures: dict[int, asyncio.Future] = {}
        self.tasks: dict[int, asyncio.Task] = {}
        self.calls = 0                           # requests sent and served (time_limit's overhead)
        self.visited: set = set()
        self.closed = False
        self.serving = 0                         # requests being served, nested
        # what to do when the peer breaks the protocol or goes away: each side sets its own
        self.lost: Callable[[WireError], None] = _raise
        # set by the submission side: the module's attributes
        self.root_getattr: Callable[[str], object] | None = None
        self.root: object | None = None  # the submission side's module, for the tests to set
        # the stream of the thread running (None: the main thread, on the first channel)
        self.tl = threading.local()
        self.main_thread = threading.get_ident()
        self.streams: Streams | None = None      # set by `open_streams`
        self.served: tuple[str, ...] = ()        # the trusted side's served modules (served.py)
        # the trusted side's requests awaiting their answer: number -> their arguments'
        # containers (the submission side: those of the calls it serves, in self.tl.received)
        self.in_flight: dict[int, dict] = {}
        # the trusted side: the submission's attribute arrays it read (borrowed.py)
        self.borrowed = Borrowed(self)

    def open_streams(self, channel: Channel, cap: int) -> Streams:
        """The second channel: one stream per thread of the trusted side other than its main
        one (see streams.py)."""
        self.streams = Streams(self, channel, cap)
        return self.streams

    # ---- requests -----------------------------------------------------------------------

    def request(self, op: str, hid: int | None, *args, **kwargs):
        """One synchronous request; serves the peer's nested requests while it waits."""
        if self.closed:
            raise PeerGone("the other process has gone")
        n = next(self.ids)
        msg = {"t": "req", "id": n, "op": op, "self": hid,
               "args": [self.encode(a) for a in args]}
        if kwargs:
            msg["kw"] = [[k, self.encode(v)] for k, v in kwargs.items()]
        # walked once the value is known to encode (a cycle fails there, not here)
        passed = _passed(args, kwargs, None)
        if self.guarded and (lent := self.borrowed.sync()):
            msg["sync"] = lent  # the tests' writes into the submission's arrays (borrowed.py)
        self.calls += 1
        stream = getattr(self.tl, "s", None)
        if stream is None and self.streams is not None and \
                threading.get_ident() != self.main_thread:
            stream = self.streams.mine()
        if passed and self.guarded:
            self.in_flight[n] = passed  # what the submission's views are views of (views.py)
        try:
            if stream is not None and self.streams is not None:
                m = self.streams.request(stream, n, msg)
            else:
                self.ch.send(msg)
                self.waiting.append(n)
                try:
                    while True:
                        m = self.ch.recv()
                        if m.get("t") == "res":
                            if m.get("id") != n:
                                raise WireError("an answer to a question not asked")
                            break
                        self.dispatch(m)
                finally:
                    self.waiting.pop()
            if m.get("back"):
                apply_back(self, passed, m["back"])
            if m.get("sync"):
                self._sync(m["sync"])
            if "err" in m:
                raise self.decode_exc(m["err"])
            ok = m.get("ok")
            if isinstance(ok, dict) and "P" in ok:
                return _argument(ok["P"], args, kwargs)
            return self.decode(ok)
        finally:  # after the answer is decoded: `return a.T` is a view of the tests' a
            self.in_flight.pop(n, None)

    def dispatch(self, m: dict) -> None:
        t = m.get("t")
        if t == "req":
            self._serve(m)
        elif t == "await":
            self._start_await(m)
        elif t == "done":
            n = m.get("id")
            fut = self.futures.pop(n, None) if isinstance(n, int) else None
            if fut is not None and not fut.done():
                if "err" in m:
                    fut.set_exception(self.decode_exc(m["err"]))
                elif m.get("cancelled"):
                    fut.cancel()
                else:
                    fut.set_result(self.decode(m.get("ok")))
        elif t == "cancel":
            n = m.get("id")
            task = self.tasks.get(n) if isinstance(n, int) else None
            if task is not None:
                task.cancel()
        elif t == "bye":
            raise PeerGone("the other side said goodbye")
        else:
            raise WireError(f"a message of no known type {str(t)[:20]!r}")

    def _serve(self, m: dict) -> None:
        n = m.get("id")
        if not isinstance(n, int):
            raise WireError("a request without a number")
        self.calls += 1
        passed: dict = {}
        received = None
        self.serving += 1
        try:
            if m.get("sync") and not self.guarded:  # the tests wrote into arrays it lent
                self._sync(m["sync"])
            target = self._target(m.get("self"))
            args = m.get("args") or []
            kw = m.get("kw") or []
            if not isinstance(args, list) or not isinstance(kw, list):
                raise WireError("malformed arguments")
            args = [a if type(a) in _PLAIN_ARG else self.decode(a) for a in args]
            kwargs = {}
            for item in kw:
                if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
                    raise WireError("malformed keyword arguments")
                kwargs[item[0]] = self.decode(item[1])
            passed = _passed(args, kwargs, self.handles)
            snaps = {key: [snapshot(c) for c in found] for key, found in passed.items()} \
                if passed else {}
            if passed and not self.guarded:  # views of them cross as views (views.py)
                received = self.tl.__dict__.setdefault("received", [])
                received.append([n, passed, None])
            op = str(m.get("op"))
            value = perform(self, op, target, args, kwargs)
            if type(value) not in _PLAIN_ARG and (p := _which(value, args, kwargs)) is not None:
                # an argument given back (`return a`): the caller's own object, not a copy
                reply = {"t": "res", "id": n, "ok": {"P": p}}
            elif op == "getattr" and not self.guarded and is_held(target, args[0], value):
                reply = {"t": "res", "id": n, "ok": self.encode_held(value)}
            elif op == "import" and not self.guarded and type(value) in (list, dict, set):
                # a module-level dict (`solution.COMM["n"] = 0`): changed by the tests in the
                # module itself, as in one process
                reply = {"t": "res", "id": n, "ok": self.encode_held(value)}
            elif op == "namespace" and not self.guarded and type(value) is dict:
                # vars(solution): its lists and dicts held too, so that setting one back
                # (mock.patch's undo) puts the module's own object there, not a copy
                reply = {"t": "res", "id": n, "ok": {"D": [
                    [k, self.encode_held(x) if type(x) in (list, dict, set) else self.encode(x)]
                    for k, x in value.items()]}}
            elif op == "getattr" and is_lent(target, args[0], value):
                # the submission's: the tests' writes to it come back (borrowed.py)
                reply = {"t": "res", "id": n, "ok": self.encode_lent(value)}
            else:
                reply = {"t": "res", "id": n, "ok": self.encode(value)}
            if passed:
                back = [[key, len(found), changes] for key, found in passed.items()
                        if (changes := encode_back(self, found, snaps[key]))]
                if back:
                    reply["back"] = back
        except WireError:
            raise
        except (Exception if self.guarded else BaseException) as e:  # noqa: BLE001
            if isinstance(e, (KeyboardInterrupt,)) or type(e).__name__ == "JudgeTimeout":
                raise
            reply = {"t": "res", "id": n, "err": self.encode_exc(e)}
        finally:
            self.serving -= 1
            if received is not None:
                received.pop()
        if self.guarded and (lent := self.borrowed.sync()):
            reply["sync"] = lent
        if self.lent_in and not self.serving:
            # the outermost call ends: what it wrote into the tests' arrays goes back with it
            sync = [[num, self.encode(a)] for num, (a, before) in self.lent_in.items()
                    if changed(a, before)]
            self.lent_in.clear()
            if sync:
                reply["sync"] = sync
        stream = getattr(self.tl, "s", None)
        if stream is None or self.streams is None:
            self.ch.send(reply)
        else:
            self.streams.send(stream, reply)

    def _sync(self, sync) -> None:
        """The peer's writes into arrays of my objects' attributes it read (encode_lent)."""
        if not isinstance(sync, list):
            raise WireError("a malformed write-back")
        for item in sync:
            if not (isinstance(item, list) and len(item) == 2 and type(item[0]) is int
                    and item[0] in self.lent_out):
                raise WireError("a write-back into an array this side never lent")
            target = lent_object(self.lent_out[item[0]])
            value = self.decode(item[1])
            if target is not None:  # (an array of the submission's that died: nothing to do)
                put_value(target, value)

    def _target(self, hid):
        if hid is None:
            return None
        if not isinstance(hid, int) or hid not in self.objects:
            raise WireError("a request about an object this side never gave")
        return self.objects[hid]

    # ---- await --------------------------------------------------------------------------

    async def await_remote(self, hid: int):
        n = next(self.ids)
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self.futures[n] = fut
        self.calls += 1
        # a test may start a loop of its own (asyncio.run): the answers must be read there too
        visiting = loop is not self.loop and loop not in self.visited
        if visiting:
            self.visited.add(loop)
            loop.add_reader(self.ch.fd_in, self.on_readable)
        self.ch.send({"t": "await", "id": n, "self": hid})
        try:
            return await fut
        except asyncio.CancelledError:
            if not self.closed:
                self.ch.send({"t": "cancel", "id": n})
            raise
        finally:
            if visiting:
                self.visited.discard(loop)
                loop.remove_reader(self.ch.fd_in)

    def _start_await(self, m: dict) -> None:
        n = m.get("id")
        if not isinstance(n, int):
            raise WireError("an await without a number")
        try:
            target = self._target(m.get("self"))
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = self.loop
            task = asyncio.ensure_future(_awaited(target), loop=loop)
        except WireError:
            raise
        except Exception as e:  # noqa: BLE001  not awaitable
            self.ch.send({"t": "done", "id": n, "err": self.encode_exc(e)})
            return
        self.tasks[n] = task
        task.add_done_callback(functools.partial(self._finished, n))

    def _finished(self, n: int, task) -> None:
        self.tasks.pop(n, None)
        if self.closed:
            return
        if task.cancelled():
            msg = {"t": "done", "id": n, "cancelled": True}
        elif task.exception() is not None:
            msg = {"t": "done", "id": n, "err": self.encode_exc(task.exception())}
        else:
            try:
                msg = {"t": "done", "id": n, "ok": self.encode(task.result())}
            except Exception as e:  # noqa: BLE001
                msg = {"t": "done", "id": n, "err": self.encode_exc(e)}
        try:
            self.ch.send(msg)
        except PeerGone:
            self.closed = True

    def on_readable(self) -> None:
        """The event loop's reader: every whole message that has arrived."""
        try:
            for m in self.ch.poll():
                self.dispatch(m)
            while (more := self.ch.pending()) is not None:
                self.dispatch(more)
        except WireError as e:
            self.closed = True
            for loop in (self.loop, *self.visited):
                loop.remove_reader(self.ch.fd_in)
            self.lost(e)


def _raise(exc: WireError) -> None:
    raise exc


def _which(value, args, kwargs):
    """The position or keyword of the argument `value` is, by identity, if any."""
    for i, a in enumerate(args):
        if a is value:
            return i
    for k, a in kwargs.items():
        if a is value:
            return k
    return None


def _argument(p, args, kwargs):
    """The caller's own argument the callee says it returned: only one of that very call."""
    if type(p) is int and 0 <= p < len(args):
        return args[p]
    if type(p) is str and p in kwargs:
        return kwargs[p]
    raise WireError("an answer naming no argument of its call")


def _passed(args, kwargs, skip) -> dict:
    """Argument position or keyword -> its mutable containers (inplace.py), for those with any."""
    out: dict = {}
    if not kwargs and all(type(a) in _PLAIN_ARG for a in args):
        return out  # most requests: nothing to walk
    for i, a in enumerate(args):
        if type(a) not in _PLAIN_ARG and (found := containers(a, skip)):
            out[i] = found
    for k, a in kwargs.items():
        if type(a) not in _PLAIN_ARG and (found := containers(a, skip)):
            out[k] = found
    return out
