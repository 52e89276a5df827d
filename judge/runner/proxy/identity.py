"""An array or tensor that crosses and comes back is the caller's own object, as in one process
(a test's `state = {"weight": w}; m.load(state); m.weight is w`; docs/IMPORTED_GRADING.md,
"Identity").

Arrays cross by value, so each side holds its own object for what one process would have once:
the sender's original and the receiver's copy are a *pair*. Each side numbers the arrays it
sends (`"i": n`, the sender's number) and remembers, weakly, the copy it made of each array the
peer numbered; an array that is such a copy goes back as `"o": n` (the receiver's own number),
and the receiver gives its own object, not a new copy. The same array sent twice is the same
copy over there too.

Values: both objects of a pair may be written between crossings (the test writes its array
after handing it over; the student writes its copy in a later call). Each side keeps the digest
of the value that last crossed for the pair: a value arriving with that digest is one the sender
did not change, so the receiver keeps its own object as it is (the test's later writes stand);
another is written into it (what the student's code wrote reaches the test's array). What
crosses is still decoded with every cap; a pair is kept only while the local object lives
(weakly held: ndarray and Tensor take weak references), and only if it keeps its dtype and
shape (otherwise the value arrives as a new copy).

Nothing here reaches beyond what one process allows: a number names only an array its side
itself sent (or the copy it made of one the peer sent), and the submission can make the
trusted side write only into arrays the tests handed it, which it could write in one process.
"""

from __future__ import annotations

import hashlib
import threading
import weakref

from .inplace import put_value
from .wire import WireError

MAX_PAIRS = 500_000


def digest(wire: dict) -> tuple:
    """The digest of an array's wire form (dtype, shape, its bytes, a tensor's dtype, device
    and grad flag): equal for the same value. The bytes are hashed wherever they travel (in the
    JSON as text, or as an attachment of the frame)."""
    try:
        return tuple((k, _part(wire[k])) for k in sorted(wire))
    except (TypeError, ValueError, BufferError):
        raise WireError("a malformed array") from None


def _part(x):
    if x is None or isinstance(x, (bool, int, float)):
        return x
    if isinstance(x, list):
        return tuple(_part(y) for y in x)
    data = getattr(x, "data", x)  # (wire.Blob: an attachment's buffer)
    if isinstance(data, str):
        data = data.encode()
    return hashlib.blake2b(data, digest_size=16).digest()


class Identities:
    """One side's pairs: `mine` for arrays this side numbered and sent, `copies` for the
    arrays this side made of the peer's numbered ones. Each maps a number to (a weak
    reference to the local object, the digest of the value that last crossed), with `ids`
    mapping id(local object) back to (table, number)."""

    def __init__(self):
        self.mine: dict[int, list] = {}
        self.copies: dict[int, list] = {}
        self.ids: dict[int, tuple[str, int]] = {}
        self.next = 0
        self.lock = threading.Lock()  # the tests' threads encode at once (streams.py)

    def _forget(self, table_name: str, num: int, key: int):
        # no lock: a weak reference's callback may run inside this side's own locked code
        def gone(ref):
            table = getattr(self, table_name)
            entry = table.get(num)
            if entry is not None and entry[0] is ref:
                del table[num]
            if self.ids.get(key) == (table_name, num):
                del self.ids[key]
        return gone

    def _keep(self, table_name: str, num: int, obj, d: tuple) -> None:
        table = getattr(self, table_name)
        if len(self.ids) >= MAX_PAIRS:
            return
        try:
            ref = weakref.ref(obj, self._forget(table_name, num, id(obj)))
        except TypeError:  # (ndarray and Tensor do take weak references)
            return
        table[num] = [ref, d]
        self.ids[id(obj)] = (table_name, num)

    def paired(self, obj) -> bool:
        found = self.ids.get(id(obj))
        entry = getattr(self, found[0]).get(found[1]) if found is not None else None
        return entry is not None and entry[0]() is obj

    def outgoing(self, obj, wire: dict, out: dict) -> None:
        """Marks `out` (the value {"A": wire} or {"X": wire} being sent) with its pair."""
        with self.lock:
            d = digest(wire)
            found = self.ids.get(id(obj))
            if found is not None:
                table = getattr(self, found[0])
                entry = table.get(found[1])
                if entry is not None and entry[0]() is obj:
                    entry[1] = d
                    out["o" if found[0] == "copies" else "i"] = found[1]
                    return
            self.next += 1
            self._keep("mine", self.next, obj, d)
            if self.ids.get(id(obj)) == ("mine", self.next):
                out["i"] = self.next

    def incoming(self, v: dict, wire: dict, value):
        """The local object for an arriving value `value` decoded from {"A"/"X": wire, ...}:
        this side's own (for "o"), the copy it made before (for "i"), or `value` itself."""
        mine, num = ("o" in v), v.get("o", v.get("i"))
        if type(num) is not int or num <= 0 or ("o" in v and "i" in v):
            raise WireError("a malformed array identity")
        with self.lock:
            table = self.mine if mine else self.copies
            if mine and num > self.next:
                raise WireError("an array this side never numbered")
            d = digest(wire)
            entry = table.get(num)
            local = entry[0]() if entry is not None else None
            if local is None or not _same_kind(local, value):
                if local is not None:
                    self.ids.pop(id(local), None)
                self._keep("mine" if mine else "copies", num, value, d)
                return value
            assert entry is not None  # (local came from it)
            if d != entry[1]:  # the sender wrote it since it last crossed
                try:
                    put_value(local, value)
                except (ValueError, TypeError, RuntimeError, WireError):
                    return value  # (a read-only array): a copy, as before
                entry[1] = d
            return local


def _same_kind(local, value) -> bool:
    return type(local) is type(value) and local.dtype == value.dtype and \
        tuple(local.shape) == tuple(value.shape)
