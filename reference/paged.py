"""The block pool of a paged KV cache, as the handbook's `paged.py` names it.

`BlockPool(num_blocks)` hands out the ids of fixed-size KV blocks and takes them back. It knows
nothing of what a block holds; the KV tensors themselves live in `kv_cache.KVCache`
(`kv.k[layer][block]`), and remembering what a block holds is `prefix_cache`'s job.

- `ref_cnt[b]`: how many sequences use block `b`;
- `free_queue`: the free block ids, the front is reused first. It is an `OrderedDict` (values
  unused) rather than the chapter's `deque`, so the prefix-caching pool that derives from this one
  can take a block out of the middle in O(1); `len`, iteration and "append at the end"
  (`free_queue[b] = None`) read the same either way.

Pure Python on purpose: this file also runs in the browser (Pyodide), where there is no torch.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Iterable, Sequence

__all__ = ["BlockPool", "slot_mapping_for"]


class BlockPool:
    """A fixed number of physical blocks: a free queue plus reference counts."""

    def __init__(self, num_blocks: int):
        if num_blocks <= 0:
            raise ValueError(f"num_blocks must be positive, got {num_blocks}")
        self.num_blocks = num_blocks
        self.ref_cnt = [0] * num_blocks
        self.free_queue: OrderedDict[int, None] = OrderedDict((b, None) for b in range(num_blocks))

    def num_free(self) -> int:
        return len(self.free_queue)

    def allocate(self, n: int) -> list[int] | None:
        """`n` blocks from the front of `free_queue`, each with `ref_cnt == 1`; `None`, changing
        nothing, when fewer than `n` are free (the scheduler then decides whom to preempt)."""
        if n < 0:
            raise ValueError(f"cannot allocate {n} blocks")
        if n > len(self.free_queue):
            return None
        blocks = [self.free_queue.popitem(last=False)[0] for _ in range(n)]
        for b in blocks:
            self.ref_cnt[b] = 1
        return blocks

    def free(self, blocks: Iterable[int]) -> None:
        """Drop one reference from each block, in the order given; a block nobody uses any more
        goes to the end of `free_queue`."""
        for b in blocks:
            self._unref(b)

    def _unref(self, b: int) -> None:
        # A negative count would later hand one block to two sequences: say so where it happens.
        if self.ref_cnt[b] <= 0:
            raise ValueError(f"block {b} freed more often than it was taken (ref_cnt {self.ref_cnt[b]})")
        self.ref_cnt[b] -= 1
        if self.ref_cnt[b] == 0:
            self.free_queue[b] = None


def slot_mapping_for(block_table: Sequence[int], positions: Iterable[int], block_size: int) -> list[int]:
    """The KV slot of each position: token `p` lives in logical block `p // block_size` at offset
    `p % block_size`, so in slot `block_table[p // block_size] * block_size + p % block_size`."""
    return [block_table[p // block_size] * block_size + p % block_size for p in positions]
