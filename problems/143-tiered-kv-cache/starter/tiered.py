"""Problem 143: a two-level KV cache, GPU blocks plus a bounded LRU store in host memory.

Write `TieredPrefixCachingBlockPool`. The statement gives the exact rules; in short:

- `allocate(n)`: before a free block that still carries a hash is reused, copy its K and V (every
  layer) into `self.host` unless that hash is already there; when `host` then holds more than
  `host_capacity` entries, drop the least recently used one.
- `lookup(token_ids)`: a hash that is not on the GPU may still be in `host`; copy it back into a
  fresh block instead of losing the rest of the prefix. Counters are in tokens, as in the parent.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Sequence

from prefix_cache import PrefixCachingBlockPool


class TieredPrefixCachingBlockPool(PrefixCachingBlockPool):
    """A prefix-caching block pool with a second tier in host (CPU) memory."""

    def __init__(self, num_blocks: int, block_size: int, host_capacity_blocks: int):
        super().__init__(num_blocks, block_size)
        # At most this many blocks are kept in host memory.
        self.host_capacity = host_capacity_blocks
        # block hash -> [(K copy, V copy) for each layer], least recently used first.
        self.host: OrderedDict[int, list[tuple]] = OrderedDict()
        # The engine's KV cache, bound after the engine is built: `pool.kv = engine.kv`.
        # `self.kv.k[layer][block]` and `self.kv.v[layer][block]` are one block's keys and values.
        self.kv = None
        self.num_offloaded = 0  # blocks copied GPU -> host
        self.num_loaded = 0     # blocks copied host -> GPU

    def allocate(self, n: int) -> list[int] | None:
        """Take `n` blocks from the front of `free_queue`, like the parent class, but first save
        the KV of every cached block among them that host memory does not hold yet.

        Returns `None`, with nothing changed and nothing copied, when fewer than `n` are free.
        """
        # TODO: offload the hashed blocks among the first n of free_queue (skip hashes already in
        #       self.host; copy with clone(), not a view), count each, and drop the LRU entry when
        #       host grows past self.host_capacity. Then let the parent class do the allocation.
        return super().allocate(n)

    def lookup(self, token_ids: Sequence[int]) -> list[int]:
        """The blocks holding the longest prefix of `token_ids` cached on the GPU or in host
        memory, in order. Host hits are copied back into fresh blocks and registered under their
        hash. Every block returned is left free but cached (or in use, if it already was).
        """
        # TODO: walk self.block_hashes(token_ids): GPU hit, host hit or stop.
        # TODO: get fresh blocks for the host hits without losing the free GPU hits you just found
        #       (set them aside from free_queue first, and put them back at the end afterwards).
        # TODO: copy the host copies into the fresh blocks (the allocation may have evicted them
        #       from host meanwhile), register them free but cached, count num_loaded.
        # TODO: num_queries += len(token_ids); num_hits += block_size per returned block.
        return super().lookup(token_ids)
