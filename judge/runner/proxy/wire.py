"""The bytes between the trusted test process and the submission's process (imported problems,
docs/IMPORTED_GRADING.md): frames of JSON with binary attachments, and values as tagged JSON data.

A frame: a head (u32 length of the JSON, u32 number of attachments, a u32 length per
attachment), the JSON, then the attachments' raw bytes. An array's, a tensor's or a bytes
object's data is an attachment, named in the JSON by `{"#": n}`: it is written from the array's
own buffer (no copy, no base64) and read back as the bytes of a bytearray it owns.

Never pickle: a frame is JSON, decoded with caps on its size, nesting and item count, and a value
becomes only plain data (None, bool, int, float, str, bytes, list, tuple, dict, set, numpy array,
torch tensor) or a handle (a number) naming an object that stays in the process that owns it.
Everything read here may come from a hostile process: any breach of the caps is `WireError`.
"""

from __future__ import annotations

import json
import json.scanner
import os
import select
import struct
import threading
from json import encoder as _json_encoder
from time import perf_counter

MAX_FRAME = 64 * 1024 * 1024      # bytes of one message (arrays travel whole)
MAX_DEPTH = 256                   # nesting of one value (py-match-eval: a 200-deep expression)
# the same in JSON: a dict level is three ({"D": [[k, v]]}), a list two, the frame a few more;
# the C decoder's own recursion is far below the interpreter's limit at this depth
MAX_JSON_DEPTH = 3 * MAX_DEPTH + 8
# both processes' recursion limit: a call nested across the proxy costs several frames on each
# side (a memoized fib(200) of the test's function: 200 nested calls; this allows about 850)
NESTED_RECURSION_LIMIT = 6000
MAX_ITEMS = 2_000_000             # scalars and containers in one message
MAX_INT_DIGITS = 4000
_INT_BOUND = 10 ** MAX_INT_DIGITS
_HEAD = struct.Struct(">II")       # JSON length, attachments
_LEN = struct.Struct(">I")
_HEAD_SIZE = _HEAD.size
MAX_ATTACHMENTS = 100_000
# the decoder's scanner itself: JSONDecoder.decode matches whitespace around the value twice
# by regex, and a frame, which json.dumps-style encoding writes without any, has none to skip
_SCAN = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]
# a pipe holds up to 1 MiB (proxied.PIPE_BYTES); read into a buffer of the channel's own, since
# `os.read` of that much allocates and faults in a fresh 1 MiB object on every call (36 us here,
# more than the rest of a small request's reading)
READ_BYTES = 1 << 20
# A frame this short cannot break the item or integer caps, and one with this few brackets
# cannot break the nesting cap: most requests are such, and skip the walk over their items.
_SHORT = MAX_INT_DIGITS


class WireError(Exception):
    """The peer broke the protocol (or went away): nothing it sent can be used."""


class PeerGone(WireError):
    pass


# An idle vCPU woken by a pipe costs the round trip about 60 us of latency and 26 us of CPU on
# each side (this VM, idle; docs/IMPORTED_GRADING.md "Waiting for an answer"); a peer that
# answers within this long is read without sleeping at all (3 us a round trip)
SPIN_S = 50e-6
# after a wait longer than the spin, the next 2**k - 1 waits block at once (k one more per miss,
# one less per hit, at most this): a peer that computes for long costs the spin almost nothing
MAX_SPIN_BACKOFF = 6


# ---- frames -------------------------------------------------------------------------------

class Channel:
    """One direction in, one out, over two pipe descriptors. `recv` blocks (after reading for
    up to `spin_s` without sleeping); `poll` reads what is there without blocking (for an event
    loop's reader)."""

    def __init__(self, fd_in: int, fd_out: int, *, spin_s: float = 0.0):
        self.fd_in, self.fd_out = fd_in, fd_out
        self.spin_s = spin_s
        self._misses = self._skip = 0
        os.set_blocking(fd_in, False)
        self.buf = bytearray()
        self._chunk = bytearray(READ_BYTES)
        self._chunk_view = memoryview(self._chunk)
        self._chunks = [self._chunk_view]
        self._fds_in = [fd_in]
        self.sent = 0

    def send(self, msg: dict) -> None:
        data, blobs = _encode(msg)
        if not blobs:  # most frames: the head and the JSON in one write
            if len(data) > MAX_FRAME:
                raise WireError(f"a message of {len(data)} bytes is over the cap of {MAX_FRAME}")
            self._write(_HEAD.pack(len(data), 0) + data)
            self.sent += 1
            return
        total = len(data) + sum(b.nbytes for b in blobs)
        if total > MAX_FRAME or len(blobs) > MAX_ATTACHMENTS:
            raise WireError(f"a message of {total} bytes is over the cap of {MAX_FRAME}")
        head = _HEAD.pack(len(data), len(blobs))
        if blobs:
            head += b"".join(_LEN.pack(b.nbytes) for b in blobs)
        self._write(head + data)
        for blob in blobs:
            self._write(blob)
        self.sent += 1

    def _write(self, part) -> None:
        try:  # (a pipe takes a small frame whole: no view to make)
            n = os.write(self.fd_out, part)
        except BrokenPipeError:
            raise PeerGone("the other process has gone") from None
        if n == len(part):
            return
        view = memoryview(part)[n:]
        while view:
            try:
                n = os.write(self.fd_out, view)
            except BrokenPipeError:
                raise PeerGone("the other process has gone") from None
            view = view[n:]

    def _frame(self) -> dict | None:
        buf = self.buf
        if len(buf) < _HEAD_SIZE:
            return None
        n, count = _HEAD.unpack_from(buf)
        if n > MAX_FRAME or count > MAX_ATTACHMENTS:
            raise WireError(f"a message announced {n} bytes, over the cap of {MAX_FRAME}")
        if not count:  # most frames: no attachment (the same caps, fewer steps)
            end = _HEAD_SIZE + n
            if len(buf) < end:
                return None
            msg = parse(buf[_HEAD_SIZE:end])
            del buf[:end]
            return msg
        start = _HEAD.size + _LEN.size * count
        if len(self.buf) < start:
            return None
        sizes = [_LEN.unpack_from(self.buf, _HEAD.size + _LEN.size * i)[0]
                 for i in range(count)] if count else []
        end = start + n + sum(sizes)
        if end - start > MAX_FRAME:
            raise WireError(f"a message of {end - start} bytes is over the cap of {MAX_FRAME}")
        if len(self.buf) < end:
            return None
        msg = parse(self.buf[start:start + n])
        if count:
            at, blobs = start + n, []
            for size in sizes:
                blobs.append(Blob(bytearray(self.buf[at:at + size])))
                at += size
            _attach(msg, blobs)
        del self.buf[:end]
        return msg

    def _fill(self) -> int:
        """Reads what is there: the number of bytes (0 when nothing was)."""
        try:
            n = os.readv(self.fd_in, self._chunks)
        except BlockingIOError:
            return 0
        if not n:
            raise PeerGone("the other process has gone")
        self.buf += self._chunk_view[:n]
        if len(self.buf) > MAX_FRAME + _HEAD.size + _LEN.size * MAX_ATTACHMENTS + READ_BYTES:
            raise WireError("too much unread data")
        return n

    def recv(self) -> dict:
        while True:
            msg = self._frame()
            if msg is not None:
                return msg
            if self.spin_s and self._spun():
                continue
            # an answer awaited is almost never there yet: wait for it first, rather than
            # read in vain (a failed read costs a syscall and an exception per frame)
            select.select(self._fds_in, (), ())
            self._fill()

    def _spun(self) -> bool:
        """Whether bytes arrived while reading without sleeping for up to `spin_s`; only the
        trusted side spins (its CPU is its own: the submission's process never does)."""
        if self._skip:
            self._skip -= 1
            return False
        end = perf_counter() + self.spin_s
        # look at least once: a spin preempted past its end before its first read would call
        # an answer already there a miss (and sleep for it)
        while True:
            if self._fill():
                self._misses = max(self._misses - 1, 0)
                return True
            if perf_counter() >= end:
                break
        self._misses = min(self._misses + 1, MAX_SPIN_BACKOFF)
        self._skip = (1 << self._misses) - 1
        return False

    def poll(self) -> list[dict]:
        out = []
        # a short read emptied the pipe: asking again would only fail (the reader is called
        # again when there is more)
        while self._fill() == READ_BYTES:
            pass
        while (msg := self._frame()) is not None:
            out.append(msg)
        return out

    def pending(self) -> dict | None:
        """A whole frame already read, if any (without reading more)."""
        return self._frame()


class _Attachments(threading.local):
    blobs: list | None = None


_ATTACHED = _Attachments()


def _attach_blob(o):
    if type(o) is not Blob or _ATTACHED.blobs is None:
        raise TypeError(f"{type(o).__name__} is not JSON data")
    _ATTACHED.blobs.append(o.data)
    return {"#": len(_ATTACHED.blobs) - 1}


# made once, not per frame as json.JSONEncoder.encode does: no cycle check (markers None), since
# every message is built afresh by the codec, whose nesting cap (MAX_DEPTH) a cycle would break
# first; the separators and allow_nan of json.JSONEncoder(separators=(",", ":"), allow_nan=True)
_MAKE = getattr(_json_encoder, "c_make_encoder", None)
_C_ENCODER = _MAKE(None, _attach_blob, _json_encoder.encode_basestring_ascii, None, ":", ",",
                   False, False, True) if _MAKE is not None else None
_PY_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=True, default=_attach_blob)


def _encode(msg: dict) -> tuple[bytes, list]:
    """The JSON of `msg` and its attachments' buffers, in the order `{"#": n}` names them."""
    blobs: list = []
    outer, _ATTACHED.blobs = _ATTACHED.blobs, blobs
    try:
        if _C_ENCODER is not None:
            text = "".join(_C_ENCODER(msg, 0))
        else:
            text = _PY_ENCODER.encode(msg)
    finally:
        _ATTACHED.blobs = outer
    return text.encode(), blobs


def parse(data: bytes | bytearray) -> dict:
    short = len(data) < _SHORT and data.count(b"[") + data.count(b"{") <= MAX_JSON_DEPTH
    try:
        text = data.decode("utf-8")
        msg, end = _SCAN(text, 0)
    except (ValueError, RecursionError, StopIteration) as e:
        raise WireError(f"a message that is not JSON: {type(e).__name__}") from None
    if end != len(text):
        raise WireError("a message with more than one value")
    if not isinstance(msg, dict):
        raise WireError("a message that is not an object")
    if not short:
        _measure(msg)
    return msg


def _measure(value) -> None:
    count = 0
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        count += 1
        if count > MAX_ITEMS:
            raise WireError(f"a message with more than {MAX_ITEMS} items")
        if depth > MAX_JSON_DEPTH:
            raise WireError(f"a message nested deeper than {MAX_DEPTH}")
        if isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, depth + 1) for x in v)
        elif isinstance(v, int) and not isinstance(v, bool) and \
                abs(v) >= _INT_BOUND:
            raise WireError("an integer too large")


# ---- values -------------------------------------------------------------------------------

class Blob:
    """Bytes that travel as an attachment of their frame: what is sent is a view of the
    sender's own buffer; what arrives is a bytearray of the receiver's."""

    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data


def _attach(msg: dict, blobs: list[Blob]) -> None:
    """Puts each attachment where the JSON names it (`{"#": n}`, n one of this frame's)."""
    stack: list = [msg]
    while stack:
        v = stack.pop()
        items = v.items() if isinstance(v, dict) else enumerate(v)
        for k, x in items:
            if isinstance(x, dict):
                if len(x) == 1 and "#" in x:
                    i = x["#"]
                    if type(i) is not int or not 0 <= i < len(blobs):
                        raise WireError("an attachment this frame does not have")
                    v[k] = blobs[i]
                else:
                    stack.append(x)
            elif isinstance(x, list):
                stack.append(x)


def attachment(data) -> Blob:
    """Bytes (or a C-contiguous buffer of them) to send as an attachment."""
    return Blob(memoryview(data).cast("B"))


def attached(value) -> bytearray:
    if type(value) is not Blob:
        raise WireError("bytes that are not an attachment")
    return value.data if isinstance(value.data, bytearray) else bytearray(value.data)


_NUMPY_KINDS = set("biufc")  # bool, int, uint, float, complex: no object arrays, no strings


def encode_array(a) -> dict:
    import numpy as np

    a = np.asarray(a, order="C")  # ascontiguousarray would make a 0-d array shape (1,)
    if a.dtype.kind not in _NUMPY_KINDS:
        raise TypeError(f"arrays of dtype {a.dtype} cannot cross between the processes")
    # the array's own bytes, sent from its buffer (a 0-d array has one element)
    return {"dtype": a.dtype.str, "shape": list(a.shape),
            "data": Blob(memoryview(a.reshape(-1).view(np.uint8)))}


def decode_array(d):
    import numpy as np

    if not isinstance(d, dict) or not isinstance(d.get("dtype"), str) or \
            not isinstance(d.get("shape"), list):
        raise WireError("a malformed array")
    try:
        dtype = np.dtype(d["dtype"])
    except TypeError:
        raise WireError("an array of an unknown dtype") from None
    if dtype.kind not in _NUMPY_KINDS or dtype.hasobject:
        raise WireError(f"an array of dtype {dtype}")
    shape = d["shape"]
    if len(shape) > 32 or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                  for n in shape):
        raise WireError("an array of a malformed shape")
    data = attached(d.get("data"))
    size = 1
    for n in shape:
        size *= n
    if size * dtype.itemsize != len(data):
        raise WireError("an array whose bytes do not match its shape")
    # an array that owns its bytes: the views the submission makes of it lead back to it by
    # `.base` (views.py), as they do to any array the tests pass in one process
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


_TORCH_VIA = {"torch.bfloat16": "<i2"}  # numpy has no bfloat16: its bytes travel as int16


def encode_tensor(t) -> dict:
    import torch

    c = t.detach().to("cpu").contiguous()
    dtype = str(c.dtype)
    if dtype in _TORCH_VIA:
        arr = c.view(torch.int16).numpy()
    else:
        arr = c.numpy()
    out = encode_array(arr)
    out.update(torch=dtype, device=str(t.device), grad=bool(t.requires_grad))
    return out


def decode_tensor(d):
    import torch

    dtype_name = d.get("torch")
    if not isinstance(dtype_name, str) or not dtype_name.startswith("torch."):
        raise WireError("a malformed tensor")
    dtype = getattr(torch, dtype_name[6:], None)
    if not isinstance(dtype, torch.dtype):
        raise WireError("a tensor of an unknown dtype")
    arr = decode_array(d)
    t = torch.from_numpy(arr)
    t = t.view(dtype) if dtype_name in _TORCH_VIA else t.to(dtype)
    device = d.get("device")
    if isinstance(device, str) and device != "cpu":
        try:
            t = t.to(device)
        except (RuntimeError, AssertionError):
            pass  # the trusted side may have no such device: the values are what counts
    if d.get("grad") is True and t.is_floating_point():
        t.requires_grad_(True)
    return t


def is_tensor(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach") and \
        hasattr(x, "dtype") and type(x).__name__ in ("Tensor", "Parameter")


def is_ndarray(x) -> bool:
    return type(x).__module__ == "numpy" and type(x).__name__ == "ndarray"


def is_numpy_scalar(x) -> bool:
    return type(x).__module__ == "numpy" and hasattr(x, "item") and hasattr(x, "dtype") and \
        not is_ndarray(x)
