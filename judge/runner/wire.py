"""The bytes between the trusted test process and the submission's process (imported problems,
docs/IMPORTED_GRADING.md): length-prefixed JSON frames, and values as tagged JSON data.

Never pickle: a frame is JSON, decoded with caps on its size, nesting and item count, and a value
becomes only plain data (None, bool, int, float, str, bytes, list, tuple, dict, set, numpy array,
torch tensor) or a handle (a number) naming an object that stays in the process that owns it.
Everything read here may come from a hostile process: any breach of the caps is `WireError`.
"""

from __future__ import annotations

import base64
import json
import os
import select
import struct

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
_HEAD = struct.Struct(">I")
_ENCODE = json.JSONEncoder(separators=(",", ":"), allow_nan=True).encode
_DECODE = json.JSONDecoder().decode
READ_BYTES = 1 << 20
# A frame this short cannot break the item or integer caps, and one with this few brackets
# cannot break the nesting cap: most requests are such, and skip the walk over their items.
_SHORT = MAX_INT_DIGITS


class WireError(Exception):
    """The peer broke the protocol (or went away): nothing it sent can be used."""


class PeerGone(WireError):
    pass


# ---- frames -------------------------------------------------------------------------------

class Channel:
    """One direction in, one out, over two pipe descriptors. `recv` blocks; `poll` reads what
    is there without blocking (for an event loop's reader)."""

    def __init__(self, fd_in: int, fd_out: int):
        self.fd_in, self.fd_out = fd_in, fd_out
        os.set_blocking(fd_in, False)
        self.buf = bytearray()
        self.sent = 0

    def send(self, msg: dict) -> None:
        data = _ENCODE(msg).encode()
        if len(data) > MAX_FRAME:
            raise WireError(f"a message of {len(data)} bytes is over the cap of {MAX_FRAME}")
        view = memoryview(_HEAD.pack(len(data)) + data)
        while view:
            try:
                n = os.write(self.fd_out, view)
            except BrokenPipeError:
                raise PeerGone("the other process has gone") from None
            view = view[n:]
        self.sent += 1

    def _frame(self) -> dict | None:
        if len(self.buf) < 4:
            return None
        (n,) = _HEAD.unpack_from(self.buf)
        if n > MAX_FRAME:
            raise WireError(f"a message announced {n} bytes, over the cap of {MAX_FRAME}")
        if len(self.buf) < 4 + n:
            return None
        data = bytes(self.buf[4:4 + n])
        del self.buf[:4 + n]
        return parse(data)

    def _fill(self) -> int:
        """Reads what is there: the number of bytes (0 when nothing was)."""
        try:
            chunk = os.read(self.fd_in, READ_BYTES)
        except BlockingIOError:
            return 0
        if not chunk:
            raise PeerGone("the other process has gone")
        self.buf.extend(chunk)
        if len(self.buf) > MAX_FRAME + 4 + READ_BYTES:
            raise WireError("too much unread data")
        return len(chunk)

    def recv(self) -> dict:
        while True:
            msg = self._frame()
            if msg is not None:
                return msg
            if not self._fill():
                select.select([self.fd_in], [], [])

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


def parse(data: bytes) -> dict:
    short = len(data) < _SHORT and data.count(b"[") + data.count(b"{") <= MAX_JSON_DEPTH
    try:
        msg = _DECODE(data.decode("utf-8"))
    except (ValueError, RecursionError) as e:
        raise WireError(f"a message that is not JSON: {type(e).__name__}") from None
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

def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def unb64(text) -> bytes:
    if not isinstance(text, str):
        raise WireError("bytes that are not base64 text")
    try:
        return base64.b64decode(text, validate=True)
    except ValueError:
        raise WireError("bytes that are not base64") from None


_NUMPY_KINDS = set("biufc")  # bool, int, uint, float, complex: no object arrays, no strings


def encode_array(a) -> dict:
    import numpy as np

    a = np.asarray(a, order="C")  # ascontiguousarray would make a 0-d array shape (1,)
    if a.dtype.kind not in _NUMPY_KINDS:
        raise TypeError(f"arrays of dtype {a.dtype} cannot cross between the processes")
    return {"dtype": a.dtype.str, "shape": list(a.shape), "data": b64(a.tobytes())}


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
    data = unb64(d.get("data"))
    size = 1
    for n in shape:
        size *= n
    if size * dtype.itemsize != len(data):
        raise WireError("an array whose bytes do not match its shape")
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
