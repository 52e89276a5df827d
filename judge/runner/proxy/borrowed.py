"""The tests' in-place writes into an array they read from an attribute of the submission's
object reach that object, as in one process (cu-autograd-engine's numeric gradient writes
`p.data[idx] = old + 1e-6` and calls the student's code again, which reads `W1.data`).

The submission side lends such an array (`encode_lent`, the number it goes by); the trusted
side keeps what it decoded with a snapshot and, with its next message to the submission (a
request, or the answer to one of the submission's), sends the new value of each one changed
since, which the submission puts into its own array (`Endpoint._sync`, as the other way
round). A copy is held strongly until that next message (`p.data[idx] = x` drops its copy at
once), then weakly: a test that keeps one and writes it later is seen while it keeps it, for
copies of at most HELD_BYTES and HELD of them (each is compared on every message: a test that
keeps a large weight and makes 10^5 calls would pay for it on each).

Limits: the submission's own later changes to its array are not seen in a copy the test
already holds (a new read gets them); a test's write sends the whole array, so a change the
submission made to it meanwhile is overwritten."""

from __future__ import annotations

import threading
import weakref

from .inplace import changed, snapshot

MAX_BORROWED = 10_000
HELD = 1000
HELD_BYTES = 64 * 1024


class Borrowed:
    def __init__(self, ep):
        self.ep = ep
        self.fresh: list[tuple[int, object, object]] = []
        self.held: dict[int, tuple[weakref.ref, object]] = {}
        self.lock = threading.Lock()

    def take(self, num: int, value, before=None) -> None:
        """`before`: what the submission's array holds, where it is not `value`'s value (the
        tests' own array, identity.py, written since it last crossed)."""
        with self.lock:
            if len(self.fresh) + len(self.held) < MAX_BORROWED:
                self.fresh.append((num, value, snapshot(value) if before is None else before))

    def sync(self) -> list | None:
        """[[number, new value]] of the copies written since the last message, or None."""
        if not self.fresh and not self.held:
            return None
        out = []
        with self.lock:
            fresh, self.fresh = self.fresh, []
            for num, value, before in fresh:
                if changed(value, before):
                    out.append([num, self.ep.encode(value)])
                    before = snapshot(value)
                if len(self.held) < HELD and _nbytes(value) <= HELD_BYTES:
                    self.held[num] = (weakref.ref(value), before)
            kept = {num for num, _, _ in fresh}
            for num, (ref, before) in list(self.held.items()):
                if num in kept:
                    continue
                value = ref()
                if value is None:
                    del self.held[num]
                elif changed(value, before):
                    out.append([num, self.ep.encode(value)])
                    self.held[num] = (ref, snapshot(value))
        return out or None


def _nbytes(value) -> int:
    n = getattr(value, "nbytes", None)  # numpy; a tensor's is its element size times count
    if not isinstance(n, int):
        n = value.numel() * value.element_size()
    return n
