"""Problem 142: the prefix-caching block pool (the handbook's `prefix_cache.py`).

Write `PrefixCachingBlockPool(BlockPool)`. The statement gives the exact rules; in short:

- full blocks are named by chained hashes (`hash_block` below does one link of the chain);
- `cache_blocks` registers computed full blocks; `lookup` finds the longest cached prefix and
  moves nothing; `touch` takes references on hits;
- `free` releases the last block first; a freed block keeps its hash ("free but cached") until
  `allocate` reuses it from the front of `free_queue` and forgets what it held;
- `num_queries` and `num_hits` count tokens.
"""

from __future__ import annotations

import hashlib
import struct
from collections import OrderedDict
from typing import Sequence

from paged import BlockPool

_NO_PARENT = -1


def hash_block(parent_hash: int | None, tokens: Sequence[int]) -> int:
    """The chained hash of one full block: sha256 over the parent block's hash (None for the
    first block of a sequence) and this block's tokens, as a non-negative 63-bit int. Ready to
    use; you do not need to change it."""
    parent = _NO_PARENT if parent_hash is None else parent_hash
    payload = struct.pack(f"<q{len(tokens)}q", parent, *tokens)
    return int.from_bytes(hashlib.sha256(payload).digest()[:8], "little") >> 1


class PrefixCachingBlockPool(BlockPool):
    """A block pool that remembers, by chained hash, which full blocks hold which prefixes."""

    enable_caching = True  # the engine asks a pool with this set for cached prefixes

    def __init__(self, num_blocks: int, block_size: int):
        super().__init__(num_blocks)  # ref_cnt, free_queue (front = reused first), num_free()
        self.block_size = block_size
        self.block_hash: list[int | None] = [None] * num_blocks  # per block: its hash, or None
        self.hash_to_block: dict[int, int] = {}                   # hash -> the block holding it
        self.num_queries = 0  # tokens asked for by lookup
        self.num_hits = 0     # tokens of the blocks lookup returned

    def block_hashes(self, token_ids: Sequence[int]) -> list[int]:
        # TODO: one chained hash per full block of token_ids; a trailing partial block has none.
        return []

    def lookup(self, token_ids: Sequence[int]) -> list[int]:
        # TODO: the blocks of the longest cached prefix, in order; stop at the first miss; move
        #       nothing; count num_queries and num_hits in tokens.
        return []

    def touch(self, blocks: Sequence[int]) -> None:
        # TODO: one more reference on each block; a free one leaves free_queue.
        raise NotImplementedError

    def cache_blocks(self, token_ids: Sequence[int], block_ids: Sequence[int], num_computed: int) -> None:
        # TODO: register the full blocks among the first num_computed tokens (block i of
        #       token_ids is block_ids[i]), unless the block or the hash is registered already.
        pass

    # TODO: allocate(n) must forget the hash of every cached block it hands out again, and
    #       free(blocks) must release the last block first. The parent's versions do neither.
