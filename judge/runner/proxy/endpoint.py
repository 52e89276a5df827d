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

from . import warnfilters
from .borrowed import Borrowed
from .capabilities import Guard, allowed
from .codec import Codec, ProxyRefused, _awaited, lent_object
from .inplace import apply_back, changed, containers, encode_back, put_value, snapshot
from .operations import is_held, is_lent, perform
from .protocol import Kind as MsgKind
from .protocol import check_message
from .serving import ServingCPU
from .snapshots import may_send
from .streams import Streams
from .wire import Channel, PeerGone, WireError

_PLAIN_ARG = (int, float, str, bool, type(None))


class Endpoint(Codec):
    def __init__(self, channel: Channel, *, guarded: bool, loop=None, guard: Guard | None = None):
        super().__init__(guarded, guard)
        self.side = "trusted" if guarded else "submission"
        self.ch = channel
        self.loop = loop
        self.ids = itertools.count(1)
        self.waiting: list[int] = []
        self.futures: dict[int, asyncio.Future] = {}
        self.tasks: dict[int, asyncio.Task] = {}
        # requests this side sent: time_limit credits the proxy's cost of these only, never of
        # the requests the peer sent (what the submission asks costs the submission)
        self.calls = 0
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
        # the trusted side: the tests' warning filters, sent when changed (warnfilters.py)
        self.warn_filters = warnfilters.Sender() if guarded else None
        self.serving_cpu = ServingCPU()  # the trusted side's, spent serving (serving.py)

    def epoch(self) -> int:
        return self.ch.sent + (self.streams.ch.sent if self.streams is not None else 0)

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
        msg = self._request_message(n, op, hid, args, kwargs)
        # walked once the value is known to encode (a cycle fails there, not here)
        passed = _passed(args, kwargs, None)
        if self.guarded and (lent := self.borrowed.sync()):
            msg["sync"] = lent  # the tests' writes into the submission's arrays (borrowed.py)
        self._warnings_out(msg)
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
                m = self._asked(n, msg)
            return self._answered(m, passed, args, kwargs)
        except PeerGone as e:  # as on the loop's path: the trusted side ends at once (75)
            self.closed = True
            self.lost(e)
            raise
        finally:  # after the answer is decoded: `return a.T` is a view of the tests' a
            self.in_flight.pop(n, None)

    def _asked(self, n: int, msg: dict) -> dict:
        """Request `n` sent on the main channel, and its answer, once the peer's requests
        nested in it are served."""
        self.ch.send(msg)
        self.waiting.append(n)
        try:
            while True:
                c0 = self.serving_cpu.now() if self.guarded else None
                m = self.ch.recv()
                kind = check_message(m, self.side)
                if kind is MsgKind.RES:
                    if m.get("id") != n:
                        raise WireError("an answer to a question not asked")
                    return m
                if c0 is not None:  # a request read here: its reading is serving too
                    self.serving_cpu.read_at(c0, m)
                self.dispatch(m, kind)
        finally:
            self.waiting.pop()

    def _answered(self, m: dict, passed: dict, args: tuple, kwargs: dict):
        """The value answer `m` carries, once what the call changed is applied here."""
        self._warnings_in(m)
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

    def _request_message(self, n: int, op: str, hid, args, kwargs) -> dict:
        outer, self.snap_ok = self.snap_ok, self.guarded and may_send(self)
        try:  # blocked in this call, the tests' code runs only when the submission asks
            msg = {"t": "req", "id": n, "op": op, "self": hid,
                   "args": [self.encode(a) for a in args]}
            if kwargs:
                msg["kw"] = [[k, self.encode(v)] for k, v in kwargs.items()]
        finally:
            self.snap_ok = outer
        return msg

    def dispatch(self, m: dict, checked: MsgKind | None = None) -> None:
        """Acts on message `m` (`checked`: its kind, when check_message already gave it)."""
        t = checked if checked is not None else check_message(m, self.side)
        if t == "req":
            self._serve(m)
        elif t == "await":
            self._start_await(m)
        elif t == "done":
            self._warnings_in(m)
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
            raise WireError(f"a {t} message in the middle of the run")

    def _serve(self, m: dict) -> None:
        # what serving the submission costs the tests' process (serving.py); timed here, not
        # by a wrapper: a call nested across costs frames on each side at every level
        c0 = self.serving_cpu.begin(m) if self.guarded else None
        n = m.get("id")
        if not isinstance(n, int):
            raise WireError("a request without a number")
        received = None
        self.serving += 1
        try:
            op, target, args, kwargs = self._request(m)
            passed = _passed(args, kwargs, self.handles)
            if passed and not self.guarded:  # views of them cross as views (views.py)
                received = self.tl.__dict__.setdefault("received", [])
                received.append([n, passed, None])
            reply = self._performed(n, op, target, args, kwargs, passed)
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
        self._send_reply(reply)
        if c0 is not None:
            self.serving_cpu.end(c0)

    def _request(self, m: dict) -> tuple[str, object, list, dict]:
        """Request `m` read: (its op, its object, its arguments and keyword arguments
        decoded), once the guard allowed it and what it brings is in place."""
        self._warnings_in(m)
        if m.get("sync") and not self.guarded:  # the tests wrote into arrays it lent
            self._sync(m["sync"])
        target = self._target(m.get("self"))
        args = m.get("args") or []
        op = str(m.get("op"))
        if self.guard is not None and target is not None:
            self._check_capability(m.get("self"), op, args)
        kw = m.get("kw") or []
        if not isinstance(args, list) or not isinstance(kw, list):
            raise WireError("malformed arguments")
        args = [a if type(a) in _PLAIN_ARG else self.decode(a) for a in args]
        kwargs = {}
        for item in kw:
            if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
                raise WireError("malformed keyword arguments")
            kwargs[item[0]] = self.decode(item[1])
        return op, target, args, kwargs

    def _performed(self, n: int, op: str, target, args: list, kwargs: dict,
                   passed: dict) -> dict:
        """The answer to request `n`, performed: its value, and what it changed in the
        lists, dicts and sets it was passed (`back`)."""
        snaps = {key: [snapshot(c) for c in found] for key, found in passed.items()} \
            if passed else {}
        value = perform(self, op, target, args, kwargs)
        # answered to a call of the tests' that waits (not from the loop): still until
        # the submission's next message
        outer, self.snap_ok = self.snap_ok, self.guarded and bool(self.waiting) and \
            may_send(self)
        try:
            reply = self._reply(n, op, target, args, kwargs, value)
        finally:
            self.snap_ok = outer
        if passed:
            back = [[key, len(found), changes] for key, found in passed.items()
                    if (changes := encode_back(self, found, snaps[key]))]
            if back:
                reply["back"] = back
        return reply

    def _send_reply(self, reply: dict) -> None:
        """The reply, with what the call wrote into arrays lent to it and the warnings it
        raised, on the channel or the stream the request came on."""
        if self.guarded and (lent := self.borrowed.sync()):
            reply["sync"] = lent
        self._warnings_out(reply)
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

    def _reply(self, n: int, op: str, target, args: list, kwargs: dict, value) -> dict:
        """The answer to request `n`, whose `op` gave `value`."""
        if type(value) not in _PLAIN_ARG and (p := _which(value, args, kwargs)) is not None:
            # an argument given back (`return a`): the caller's own object, not a copy
            return {"t": "res", "id": n, "ok": {"P": p}}
        if op == "getattr" and not self.guarded and is_held(target, args[0], value):
            return {"t": "res", "id": n, "ok": self.encode_held(value)}
        if op == "import" and not self.guarded and type(value) in (list, dict, set):
            # a module-level dict (`solution.COMM["n"] = 0`): changed by the tests in the
            # module itself, as in one process
            return {"t": "res", "id": n, "ok": self.encode_held(value)}
        if op == "namespace" and not self.guarded and type(value) is dict:
            # vars(solution): its lists and dicts held too, so that setting one back
            # (mock.patch's undo) puts the module's own object there, not a copy
            return {"t": "res", "id": n, "ok": {"D": [
                [k, self.encode_held(x) if type(x) in (list, dict, set) else self.encode(x)]
                for k, x in value.items()]}}
        if op == "getattr" and is_lent(target, args[0], value):
            # the submission's: the tests' writes to it come back (borrowed.py)
            return {"t": "res", "id": n, "ok": self.encode_lent(value)}
        return {"t": "res", "id": n, "ok": self.encode(value)}

    def _warnings_out(self, msg: dict) -> None:
        """The tests' warning filters with what lets the submission run; the warnings the
        submission's code showed with what it sends (warnfilters.py)."""
        if self.warn_filters is not None:
            if msg["t"] != "done":
                self.warn_filters.attach(msg)
        elif msg["t"] != "await":
            warnfilters.drain(self, msg)

    def _warnings_in(self, m: dict) -> None:
        if self.guarded:
            if "w" in m:
                warnfilters.show(self, m["w"])
        elif "wf" in m:
            warnfilters.install(m["wf"])

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

    def _check_capability(self, hid, op: str, args: list) -> None:
        """The guarded side's allow-list: a handle answers what its kind declares."""
        kind = self.kinds[hid]
        name = args[0] if args and op == "callm" else None
        if not allowed(kind, op, [name] if name is not None else args):
            what = f"{op} {str(name)[:40]!r}" if name is not None else op
            raise ProxyRefused(f"{what} of a {kind} of the tests is not available to the "
                               "submission")

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
        msg = {"t": "await", "id": n, "self": hid}
        self._warnings_out(msg)
        self.ch.send(msg)
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
            self._warnings_in(m)
            target = self._target(m.get("self"))
            if self.guard is not None:
                self._check_capability(m.get("self"), "await", [])
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
        self._warnings_out(msg)
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
