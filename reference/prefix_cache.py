"""Prefix caching in the vLLM style: chained block hashes, and free blocks that double as an LRU
cache.

- Every full block has a hash covering its parent's hash and its own tokens, so equal hashes mean
  equal prefixes from the start of the sequence, not just equal blocks.
- A block whose reference count drops to 0 goes to `free_queue` but keeps its contents and hash:
  it can still be hit ("free but cached").
- `allocate` reuses blocks from the front of `free_queue`; a reused block that carried a hash is
  evicted from the cache. Queue order is therefore LRU order.

A block is in one of three states:

- in use: `ref_cnt[b] > 0`, not in `free_queue`;
- free but cached: `ref_cnt[b] == 0`, in `free_queue`, `block_hash[b]` set and
  `hash_to_block[block_hash[b]] == b`;
- free: `ref_cnt[b] == 0`, in `free_queue`, `block_hash[b] is None`.

This is the handbook's `prefix_cache.py` contract, behaviour included: counters in tokens, `free`
in reverse order, `cache_blocks(token_ids, block_ids, num_computed)`, a `lookup` that moves
nothing. One deliberate difference: block hashes are sha256-based rather than Python's `hash()`,
because the value must be the same in every process and on every platform (the browser runs a
32-bit Python whose `hash()` differs, and `hash()` of a tuple of ints is not stable across Python
versions). Nothing observable depends on the hash values themselves.

Pure Python on purpose: this file also runs in the browser (Pyodide), where there is no torch.
"""

from __future__ import annotations

import hashlib
import struct
from collections import OrderedDict
from typing import Sequence

from paged import BlockPool

__all__ = ["BlockPool", "PrefixCachingBlockPool", "hash_block"]

_NO_PARENT = -1


def hash_block(parent_hash: int | None, tokens: Sequence[int]) -> int:
    """The chained hash of one full block: a non-negative 63-bit int from sha256 over the parent's
    hash and the block's tokens."""
    parent = _NO_PARENT if parent_hash is None else parent_hash
    payload = struct.pack(f"<q{len(tokens)}q", parent, *tokens)
    return int.from_bytes(hashlib.sha256(payload).digest()[:8], "little") >> 1


class PrefixCachingBlockPool(BlockPool):
    """A block pool that remembers, by chained hash, which full blocks hold which prefixes."""

    enable_caching = True  # the engine asks a pool with this set for cached prefixes

    def __init__(self, num_blocks: int, block_size: int):
        super().__init__(num_blocks)
        if block_size <= 0:
            raise ValueError(f"block_size must be positive, got {block_size}")
        self.block_size = block_size
        self.free_queue = OrderedDict((b, None) for b in range(num_blocks))  # the front is reused first
        self.hash_to_block: dict[int, int] = {}
        self.block_hash: list[int | None] = [None] * num_blocks
        self.num_queries = self.num_hits = 0  # in tokens

    def allocate(self, n: int) -> list[int] | None:
        """`n` blocks from the front of `free_queue`; a reused block that carried a hash is evicted
        from the cache (its contents are about to be overwritten). `None`, changing nothing, when
        fewer than `n` are free."""
        if n < 0:
            raise ValueError(f"cannot allocate {n} blocks")
        if n > len(self.free_queue):
            return None
        blocks = []
        for _ in range(n):
            b, _ = self.free_queue.popitem(last=False)
            h = self.block_hash[b]
            if h is not None:
                self.block_hash[b] = None
                if self.hash_to_block.get(h) == b:
                    del self.hash_to_block[h]
            self.ref_cnt[b] = 1
            blocks.append(b)
        return blocks

    def free(self, blocks: Sequence[int]) -> None:
        """Drop one reference from each block, **last block first**: the tail of a sequence is the
        least likely to be shared, so it should be the first to be evicted. The engine passes a
        block table as it is."""
        for b in reversed(list(blocks)):
            self._unref(b)

    def touch(self, blocks: Sequence[int]) -> None:
        """A new sequence uses these (hit) blocks: one more reference each; a free one leaves
        `free_queue`."""
        for b in blocks:
            if self.ref_cnt[b] == 0:
                del self.free_queue[b]
            self.ref_cnt[b] += 1

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
        """The blocks of the longest cached prefix of `token_ids` (full blocks only), in order.

        It moves nothing: hit blocks that are free stay where they are in `free_queue` until the
        caller `touch`es them. `num_queries` grows by `len(token_ids)`, `num_hits` by the tokens of
        the returned blocks.
        """
        hit = []
        for h in self.block_hashes(token_ids):
            b = self.hash_to_block.get(h)
            if b is None:
                break
            hit.append(b)
        self.num_queries += len(token_ids)
        self.num_hits += len(hit) * self.block_size
        return hit

    def cache_blocks(self, token_ids: Sequence[int], block_ids: Sequence[int], num_computed: int) -> None:
        """Called after a forward step: register the full blocks among the first `num_computed`
        tokens of `token_ids` (held by `block_ids`, the sequence's block table). A block that
        already has an identity keeps it; when another block already holds the same prefix, that
        one stays the cached copy and this one remains anonymous."""
        for i, h in enumerate(self.block_hashes(token_ids[:num_computed])):
            b = block_ids[i]
            if self.block_hash[b] is None and h not in self.hash_to_block:
                self.register(b, h)

    def register(self, block: int, h: int) -> None:
        """Record that `block` holds the prefix whose hash is `h` (an extra of this platform: the
        chapter writes the two assignments inline)."""
        self.block_hash[block] = h
        self.hash_to_block[h] = block
