"""The call proxy between the trusted test process and the submission's process (imported
problems; docs/IMPORTED_GRADING.md). Each side is an `Endpoint`: objects it hands over stay in
its own process and cross as handles; the peer holds `Remote` stand-ins whose attribute reads,
calls, iteration, len, comparisons and `await` become requests. Requests nest (a call may call
back into the caller before it answers), and `await` runs on both sides' event loops at once, so
coroutine factories handed to the submission run concurrently on the trusted side.

The trusted side is `guarded`: the submission may call what the tests handed it and read or set
their public attributes, and nothing else (no `_` names, no modules, no functions' or classes'
attributes set). Comparing a `Remote` with a plain value never asks the submission: equality is
identity there, order is a TypeError, so an object that says "equal to anything" equals nothing.
"""

from __future__ import annotations

import asyncio
import builtins
import itertools
import types

from .wire import (Channel, PeerGone, WireError, decode_array, decode_tensor, encode_array,
                   encode_tensor, is_ndarray, is_numpy_scalar, is_tensor, unb64, b64,
                   MAX_DEPTH)

MAX_HANDLES = 500_000
MAX_TEXT = 4000
UNARY = {"__neg__", "__pos__", "__abs__", "__invert__", "__float__", "__int__", "__index__",
         "__round__", "__reversed__", "__enter__"}
BINARY = {f"__{p}{n}__" for n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
                                  "matmul", "and", "or", "xor", "lshift", "rshift")
          for p in ("", "r")}
_SCALARS = (int, float, str, bool, type(None))
ORDER = {"__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"}
OPS = UNARY | BINARY | ORDER | {"__exit__"}


class ProxyRefused(TypeError):
    """The submission asked for something of the trusted side it may not have."""


def _builtin_base(cls) -> type:
    for k in cls.__mro__:
        if getattr(builtins, k.__name__, None) is k:
            return k
    return Exception


class Endpoint:
    def __init__(self, channel: Channel, *, guarded: bool, loop=None):
        self.ch, self.guarded = channel, guarded
        self.loop = loop
        self.objects: dict[int, object] = {}     # handle -> my object the peer holds
        self.handles: dict[int, int] = {}        # id(my object) -> handle
        self.remotes: dict[int, Remote] = {}     # handle -> the peer's object
        self.mirrors: dict[int, type] = {}       # handle -> local class for a peer exception class
        self.ids = itertools.count(1)
        self.waiting: list[int] = []
        self.futures: dict[int, asyncio.Future] = {}
        self.tasks: dict[int, asyncio.Task] = {}
        self.calls = 0                           # requests sent and served (time_limit's overhead)
        self.visited: set = set()
        self.closed = False

    # ---- values -------------------------------------------------------------------------

    def export(self, obj) -> int:
        key = id(obj)
        hid = self.handles.get(key)
        if hid is None:
            if len(self.objects) >= MAX_HANDLES:
                raise WireError("too many objects handed over")
            hid = len(self.objects) + 1
            self.objects[hid], self.handles[key] = obj, hid
        return hid

    def encode(self, v, depth: int = 0):
        if depth > MAX_DEPTH:
            raise ValueError(f"a value nested deeper than {MAX_DEPTH} cannot cross")
        t = type(v)
        if v is None or t in (bool, int, float, str):
            return v
        if isinstance(v, Remote) and v._ep is self:
            return {"H": v._hid}
        if isinstance(v, type) and v in self._mirror_of:
            return {"H": self._mirror_of[v]}
        d = depth + 1
        if t is list or t is tuple:
            tag = "L" if t is list else "T"
            if all(type(x) in _SCALARS for x in v):  # the common case, at C speed
                return {tag: list(v)}
            return {tag: [self.encode(x, d) for x in v]}
        if t is dict:
            return {"D": [[self.encode(k, d), self.encode(x, d)] for k, x in v.items()]}
        if t in (set, frozenset):
            return {"S" if t is set else "F": [self.encode(x, d) for x in v]}
        if t in (bytes, bytearray):
            return {"B" if t is bytes else "BA": b64(bytes(v))}
        if is_ndarray(v):
            return {"A": encode_array(v)}
        if is_numpy_scalar(v):
            return self.encode(v.item(), d)
        if is_tensor(v):
            return {"X": encode_tensor(v)}
        if isinstance(v, types.ModuleType) and self.guarded:
            raise ProxyRefused("a module of the tests cannot be handed to the submission")
        if isinstance(v, (bool, int, float, str)):  # subclasses travel as their plain value
            return self.encode(_plain_base(v), d)
        kinds = ""
        if callable(v):
            kinds += "c"
        if hasattr(type(v), "__await__") or asyncio.iscoroutine(v):
            kinds += "a"
        if asyncio.iscoroutine(v):
            kinds += "o"
        out = {"R": self.export(v), "k": kinds, "n": _name(v)}
        if isinstance(v, type) and issubclass(v, BaseException):
            out["x"] = _builtin_base(v).__name__
        return out

    @property
    def _mirror_of(self) -> dict:
        return getattr(self, "_mirror_index", {})

    def decode(self, v, depth: int = 0):
        if depth > MAX_DEPTH + 2:
            raise WireError("a value nested too deeply")
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if isinstance(v, list):
            raise WireError("a bare list in a value")
        if not isinstance(v, dict) or len(v) < 1:
            raise WireError("a malformed value")
        d = depth + 1
        if "L" in v or "T" in v or "S" in v or "F" in v:
            items = v.get("L", v.get("T", v.get("S", v.get("F"))))
            if not isinstance(items, list):
                raise WireError("a malformed sequence")
            seq = items if all(type(x) in _SCALARS for x in items) else \
                [self.decode(x, d) for x in items]
            if "L" in v:
                return seq
            if "T" in v:
                return tuple(seq)
            try:
                return set(seq) if "S" in v else frozenset(seq)
            except TypeError:
                raise WireError("a set of unhashable items") from None
        if "D" in v:
            pairs = v["D"]
            if not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2
                                                      for p in pairs):
                raise WireError("a malformed dict")
            try:
                return {self.decode(k, d): self.decode(x, d) for k, x in pairs}
            except TypeError:
                raise WireError("a dict with an unhashable key") from None
        if "B" in v:
            return unb64(v["B"])
        if "BA" in v:
            return bytearray(unb64(v["BA"]))
        if "A" in v:
            return decode_array(v["A"])
        if "X" in v:
            return decode_tensor(v["X"])
        if "H" in v:
            obj = self.objects.get(v["H"]) if isinstance(v["H"], int) else None
            if obj is None and v["H"] not in self.objects:
                raise WireError("a handle this side never gave")
            return obj
        if "R" in v:
            hid = v["R"]
            if not isinstance(hid, int) or isinstance(hid, bool) or hid <= 0:
                raise WireError("a malformed handle")
            if "x" in v:
                return self._mirror(hid, v)
            r = self.remotes.get(hid)
            if r is None:
                if len(self.remotes) >= MAX_HANDLES:
                    raise WireError("too many handles")
                kinds = v.get("k") if isinstance(v.get("k"), str) else ""
                name = v.get("n") if isinstance(v.get("n"), str) else "object"
                r = Remote._make(self, hid, kinds[:4], name[:100])
                self.remotes[hid] = r
            if "o" in r._kinds:  # a real coroutine here too: create_task and asyncio.run take it
                return _awaited(r)
            return r
        raise WireError("a value of no known kind")

    def _mirror(self, hid: int, v: dict) -> type:
        """A real local exception class for one of the peer's: `except`, `raises` and
        isinstance work on it (the peer's class hierarchy above the builtin base is flattened)."""
        cls = self.mirrors.get(hid)
        if cls is None:
            base = getattr(builtins, str(v.get("x")), None)
            if not (isinstance(base, type) and issubclass(base, Exception)):
                base = Exception
            name = str(v.get("n") or "Error")[:100]
            cls = type(name if name.isidentifier() else "Error", (base,), {})
            self.mirrors[hid] = cls
            index = self._mirror_of
            index[cls] = hid
            self._mirror_index = index
        return cls

    def encode_exc(self, e: BaseException) -> dict:
        cls = type(e)
        base = _builtin_base(cls)
        try:
            text = str(e)
        except Exception:
            text = f"<{cls.__name__}>"
        out = {"n": cls.__name__[:100], "b": base.__name__, "m": text[:MAX_TEXT]}
        if base is not cls and cls not in self._mirror_of:
            out["c"] = self.encode(cls)
        elif cls in self._mirror_of:
            out["c"] = {"H": self._mirror_of[cls]}
        return out

    def decode_exc(self, d) -> BaseException:
        if not isinstance(d, dict):
            raise WireError("a malformed exception")
        msg = str(d.get("m", ""))[:MAX_TEXT]
        cls = None
        if "c" in d:
            c = self.decode(d["c"])
            if isinstance(c, type) and issubclass(c, Exception):
                cls = c
        if cls is None:
            b = getattr(builtins, str(d.get("b")), None)
            cls = b if isinstance(b, type) and issubclass(b, Exception) else None
        if cls is None:  # SystemExit, KeyboardInterrupt...: never re-raised as themselves
            return RuntimeError(f"{d.get('n', 'BaseException')}: {msg}")
        try:
            return cls(msg)
        except Exception:
            return RuntimeError(f"{d.get('n')}: {msg}")

    # ---- requests -----------------------------------------------------------------------

    def request(self, op: str, hid: int | None, *args, **kwargs):
        """One synchronous request; serves the peer's nested requests while it waits."""
        if self.closed:
            raise PeerGone("the other process has gone")
        n = next(self.ids)
        arrays = [(i, a) for i, a in enumerate(args) if is_ndarray(a) or is_tensor(a)]
        msg = {"t": "req", "id": n, "op": op, "self": hid,
               "args": [self.encode(a) for a in args],
               "kw": [[k, self.encode(v)] for k, v in kwargs.items()]}
        self.calls += 1
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
        self._copy_back(arrays, m.get("back"))
        if "err" in m:
            raise self.decode_exc(m["err"])
        return self.decode(m.get("ok"))

    def _copy_back(self, arrays, back) -> None:
        """In-place changes the peer made to arrays or tensors passed to it, copied into ours."""
        if not back:
            return
        if not isinstance(back, list):
            raise WireError("a malformed copy-back")
        mine = dict(arrays)
        for item in back:
            if not (isinstance(item, list) and len(item) == 2 and item[0] in mine):
                raise WireError("a copy-back of an argument that was not an array")
            orig, new = mine[item[0]], self.decode(item[1])
            if is_tensor(orig):
                if not is_tensor(new) or tuple(new.shape) != tuple(orig.shape):
                    raise WireError("a copy-back of another shape")
                with __import__("torch").no_grad():
                    orig.copy_(new.to(orig.device, orig.dtype))
            else:
                import numpy as np
                if not is_ndarray(new) or new.shape != orig.shape:
                    raise WireError("a copy-back of another shape")
                np.copyto(orig, new.astype(orig.dtype, copy=False))

    def dispatch(self, m: dict) -> None:
        t = m.get("t")
        if t == "req":
            self._serve(m)
        elif t == "await":
            self._start_await(m)
        elif t == "done":
            fut = self.futures.pop(m.get("id"), None) if isinstance(m.get("id"), int) else None
            if fut is not None and not fut.done():
                if "err" in m:
                    fut.set_exception(self.decode_exc(m["err"]))
                elif m.get("cancelled"):
                    fut.cancel()
                else:
                    fut.set_result(self.decode(m.get("ok")))
        elif t == "cancel":
            task = self.tasks.get(m.get("id")) if isinstance(m.get("id"), int) else None
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
        arrays = []
        try:
            target = self._target(m.get("self"))
            args = m.get("args") or []
            kw = m.get("kw") or []
            if not isinstance(args, list) or not isinstance(kw, list):
                raise WireError("malformed arguments")
            args = [self.decode(a) for a in args]
            kwargs = {}
            for item in kw:
                if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
                    raise WireError("malformed keyword arguments")
                kwargs[item[0]] = self.decode(item[1])
            arrays = [(i, a, _snapshot(a)) for i, a in enumerate(args)
                      if is_ndarray(a) or is_tensor(a)]
            value = self._perform(str(m.get("op")), target, args, kwargs)
            reply = {"t": "res", "id": n, "ok": self.encode(value)}
        except WireError:
            raise
        except (Exception if self.guarded else BaseException) as e:  # noqa: BLE001
            if isinstance(e, (KeyboardInterrupt,)) or type(e).__name__ == "JudgeTimeout":
                raise
            reply = {"t": "res", "id": n, "err": self.encode_exc(e)}
        back = [[i, self.encode(a)] for i, a, before in arrays if _changed(a, before)]
        if back:
            reply["back"] = back
        self.ch.send(reply)

    def _target(self, hid):
        if hid is None:
            return None
        if not isinstance(hid, int) or hid not in self.objects:
            raise WireError("a request about an object this side never gave")
        return self.objects[hid]

    def _perform(self, op: str, target, args, kwargs):
        if op == "ping":
            return None
        if op == "import":  # the submission side only: the module's attribute
            if self.guarded:
                raise ProxyRefused("the tests' modules cannot be imported from here")
            return self.root_getattr(*args)
        if target is None:
            raise WireError("a request without its object")
        if op in ("getattr", "setattr", "delattr"):
            name = args[0] if args else None
            if not isinstance(name, str):
                raise WireError("an attribute without a name")
            if self.guarded:
                if name.startswith("_"):
                    raise ProxyRefused(f"attribute {name!r} of the tests' objects is not "
                                       "available to the submission")
                if op != "getattr" and isinstance(target, (type, types.ModuleType,
                                                           types.FunctionType,
                                                           types.MethodType,
                                                           types.BuiltinFunctionType)):
                    raise ProxyRefused("the tests' functions and classes cannot be changed")
            if op == "getattr":
                return getattr(target, name)
            if op == "setattr":
                return setattr(target, name, args[1])
            return delattr(target, name)
        if op == "call":
            return target(*args, **kwargs)
        if op == "iter":
            return iter(target)
        if op == "next":
            return next(target)
        if op == "len":
            return len(target)
        if op == "contains":
            return args[0] in target
        if op == "getitem":
            return target[args[0]]
        if op == "setitem":
            target[args[0]] = args[1]
            return None
        if op == "delitem":
            del target[args[0]]
            return None
        if op == "bool":
            return bool(target)
        if op == "hash":
            return hash(target)
        if op in ("repr", "str"):
            return (repr if op == "repr" else str)(target)[:MAX_TEXT]
        if op in OPS:
            return getattr(target, op)(*args)
        raise WireError(f"an operation of no known kind {op[:20]!r}")

    root_getattr = None  # set by the submission side: the module's attributes

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
        task.add_done_callback(lambda t, n=n: self._finished(n, t))

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
            while (m := self.ch.pending()) is not None:
                self.dispatch(m)
        except WireError as e:
            self.closed = True
            for loop in (self.loop, *self.visited):
                loop.remove_reader(self.ch.fd_in)
            self.lost(e)

    def lost(self, exc: WireError) -> None:
        """What to do when the peer breaks the protocol or goes away (each side decides)."""
        raise exc


async def _awaited(x):
    return await x


def _snapshot(a):
    return a.detach().clone() if is_tensor(a) else a.copy()


def _changed(a, before) -> bool:
    if is_tensor(a):
        import torch
        return a.shape != before.shape or not torch.equal(a.detach(), before)
    import numpy as np
    return a.shape != before.shape or not np.array_equal(a, before, equal_nan=True)


def _plain_base(v):
    for base in (bool, int, float, str):
        if isinstance(v, base):
            return base(v) if base is not str else str.__str__(v)
    return v


def _name(v) -> str:
    n = getattr(v, "__name__", None) if isinstance(v, (type, types.FunctionType)) else None
    return str(n or type(v).__name__)[:100]


# ---- the stand-in for the peer's objects ---------------------------------------------------

def _op(name):
    def method(self, *args):
        if name in ORDER and not all(isinstance(a, Remote) and a._ep is self._ep for a in args):
            return NotImplemented  # a plain value is never compared by the other side
        return self._ep.request(name, self._hid, *args)
    method.__name__ = name
    return method


class Remote:
    __slots__ = ("_ep", "_hid", "_kinds", "_name", "__weakref__")

    @classmethod
    def _make(cls, ep, hid, kinds, name):
        r = object.__new__(_CALLABLE if "c" in kinds else cls)
        object.__setattr__(r, "_ep", ep)
        object.__setattr__(r, "_hid", hid)
        object.__setattr__(r, "_kinds", kinds)
        object.__setattr__(r, "_name", name)
        return r

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._ep.request("getattr", self._hid, name)

    def __setattr__(self, name, value):
        self._ep.request("setattr", self._hid, name, value)

    def __delattr__(self, name):
        self._ep.request("delattr", self._hid, name)

    def __iter__(self):
        return self._ep.request("iter", self._hid)

    def __next__(self):
        return self._ep.request("next", self._hid)

    def __len__(self):
        n = self._ep.request("len", self._hid)
        if type(n) is not int or n < 0:
            raise TypeError("len() of the submission's object is not a non-negative int")
        return n

    def __contains__(self, x):
        return self._ep.request("contains", self._hid, x) is True

    def __getitem__(self, k):
        return self._ep.request("getitem", self._hid, k)

    def __setitem__(self, k, v):
        self._ep.request("setitem", self._hid, k, v)

    def __delitem__(self, k):
        self._ep.request("delitem", self._hid, k)

    def __bool__(self):
        return self._ep.request("bool", self._hid) is True

    def __hash__(self):
        h = self._ep.request("hash", self._hid)
        if type(h) is not int:
            raise TypeError("hash() of the submission's object is not an int")
        return h

    def __repr__(self):
        try:
            text = self._ep.request("repr", self._hid)
        except Exception:
            text = None
        return text if isinstance(text, str) else f"<{self._name}>"

    def __str__(self):
        text = self._ep.request("str", self._hid)
        return text if isinstance(text, str) else f"<{self._name}>"

    def __await__(self):
        return self._ep.await_remote(self._hid).__await__()


for _n in sorted(OPS):
    setattr(Remote, _n, _op(_n))
Remote.__hash__ = Remote.__dict__["__hash__"]  # defining __eq__ above would unset it otherwise


class _Callable(Remote):
    __slots__ = ()

    def __call__(self, *args, **kwargs):
        return self._ep.request("call", self._hid, *args, **kwargs)


_CALLABLE = _Callable
