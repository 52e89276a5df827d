"""Block pools for a paged KV cache: a plain one and one with prefix caching.

The engine stores keys and values in fixed-size blocks of `block_size` tokens. A pool hands out
block ids and takes them back; it never touches the KV tensors themselves.

`PrefixCachingBlockPool` keeps the identity of a freed block (the hash of the tokens it holds) for
as long as it can, so that a later request with the same prefix finds it again. A block is then in
one of three states:

- in use: `ref_cnt[b] > 0`, not in `free_queue`;
- free but cached: `ref_cnt[b] == 0`, in `free_queue`, `block_hash[b]` set and
  `hash_to_block[block_hash[b]] == b`;
- free: `ref_cnt[b] == 0`, in `free_queue`, `block_hash[b] is None`.

`free_queue` is ordered least recently used first: `allocate` reuses blocks from the front, `free`
puts blocks back at the end. Reusing a cached block forgets its identity.

This module is pure Python on purpose: the same file runs on the server, locally and in the
browser (Pyodide), where there is no torch.
"""

from __future__ import annotations

import hashlib
import struct
from collections import OrderedDict
from typing import Iterable, Sequence

__all__ = ["BlockPool", "PrefixCachingBlockPool", "hash_block"]

_NO_PARENT = -1


def hash_block(parent_hash: int | None, tokens: Sequence[int]) -> int:
    """The chained hash of one full block: it covers the block's tokens and its parent's hash, so
    equal hashes mean equal prefixes, not just equal blocks.

    sha256 rather than Python's `hash()`: the value must be the same on every platform (the browser
    runs a 32-bit Python whose `hash()` differs) and in every process.
    """
    parent = _NO_PARENT if parent_hash is None else parent_hash
    payload = struct.pack(f"<q{len(tokens)}q", parent, *tokens)
    return int.from_bytes(hashlib.sha256(payload).digest()[:8], "little") >> 1


class BlockPool:
    """A pool of `num_blocks` KV blocks without any caching: freed blocks are simply free."""

    def __init__(self, num_blocks: int, block_size: int):
        if num_blocks <= 0 or block_size <= 0:
            raise ValueError(f"num_blocks and block_size must be positive, got {num_blocks}, {block_size}")
        self.num_blocks = num_blocks
        self.block_size = block_size
        # Values are unused: an OrderedDict gives O(1) removal from the middle and ordered pops.
        self.free_queue: OrderedDict[int, None] = OrderedDict((b, None) for b in range(num_blocks))
        self.ref_cnt = [0] * num_blocks
        self.num_queries = 0
        self.num_hits = 0

    @property
    def num_free_blocks(self) -> int:
        return len(self.free_queue)

    def allocate(self, n: int) -> list[int] | None:
        """Take `n` blocks from the front of `free_queue` (reference count 1 each); `None`, with
        nothing changed, when fewer than `n` are free."""
        if n < 0:
            raise ValueError(f"cannot allocate {n} blocks")
        if len(self.free_queue) < n:
            return None
        blocks = []
        for _ in range(n):
            block, _ = self.free_queue.popitem(last=False)
            self._forget(block)
            self.ref_cnt[block] = 1
            blocks.append(block)
        return blocks

    def free(self, blocks: Iterable[int]) -> None:
        """Drop one reference from each block; a block whose count reaches zero goes to the end of
        `free_queue` (most recently used)."""
        for block in blocks:
            if self.ref_cnt[block] <= 0:
                raise ValueError(f"block {block} freed more often than it was taken")
            self.ref_cnt[block] -= 1
            if self.ref_cnt[block] == 0:
                self.free_queue[block] = None

    def touch(self, blocks: Iterable[int]) -> None:
        """Take one more reference on each block; a free block leaves `free_queue`."""
        for block in blocks:
            if self.ref_cnt[block] == 0:
                del self.free_queue[block]
            self.ref_cnt[block] += 1

    def lookup(self, token_ids: Sequence[int]) -> list[int]:
        """A plain pool caches nothing."""
        return []

    def cache_blocks(self, blocks: Sequence[int], token_ids: Sequence[int]) -> None:
        """Told which blocks hold which computed tokens; a plain pool ignores it."""

    def _forget(self, block: int) -> None:
        """Hook for pools that remember what a block held."""


class PrefixCachingBlockPool(BlockPool):
    """A block pool that remembers, by chained hash, which full blocks hold which prefixes."""

    def __init__(self, num_blocks: int, block_size: int):
        super().__init__(num_blocks, block_size)
        self.block_hash: list[int | None] = [None] * num_blocks
        self.hash_to_block: dict[int, int] = {}

    def block_hashes(self, token_ids: Sequence[int]) -> list[int]:
        """Chained hashes of the full blocks of `token_ids`; a trailing partial block has none."""
        hashes: list[int] = []
        parent = None
        bs = self.block_size
        for start in range(0, len(token_ids) - bs + 1, bs):
            parent = hash_block(parent, token_ids[start:start + bs])
            hashes.append(parent)
        return hashes

    def lookup(self, token_ids: Sequence[int]) -> list[int]:
        """The blocks holding the longest cached prefix of `token_ids`, in order.

        They are not taken: blocks that were free stay in `free_queue` ("free but cached") until
        the caller decides to use them and calls `touch`. Counters are in blocks: every full block
        of the query counts in `num_queries`, every returned block in `num_hits`.
        """
        hashes = self.block_hashes(token_ids)
        self.num_queries += len(hashes)
        blocks = []
        for h in hashes:
            block = self.hash_to_block.get(h)
            if block is None:
                break
            blocks.append(block)
        self.num_hits += len(blocks)
        return blocks

    def cache_blocks(self, blocks: Sequence[int], token_ids: Sequence[int]) -> None:
        """Register the full blocks among `blocks` whose KV for `token_ids` is computed.

        `blocks` is a sequence's block table, `token_ids` its tokens whose KV is written. A block
        that already has an identity keeps it; when another block already holds the same prefix,
        the first one stays the cached copy and this one remains anonymous.
        """
        for block, h in zip(blocks, self.block_hashes(token_ids)):
            if self.block_hash[block] is None and h not in self.hash_to_block:
                self.register(block, h)

    def register(self, block: int, h: int) -> None:
        """Record that `block` holds the prefix whose hash is `h`."""
        self.block_hash[block] = h
        self.hash_to_block[h] = block

    def _forget(self, block: int) -> None:
        h = self.block_hash[block]
        if h is not None:
            self.block_hash[block] = None
            if self.hash_to_block.get(h) == block:
                del self.hash_to_block[h]
