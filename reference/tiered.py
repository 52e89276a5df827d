"""Problem 143, the reference answer: a prefix cache with two tiers, GPU blocks and host memory.

A plain prefix-caching pool loses a cached block the moment `allocate` reuses it. This pool first
copies the block's KV (every layer) into `host`, a bounded LRU store in CPU memory keyed by the
block's hash. A later `lookup` that misses on the GPU but hits in `host` takes a fresh block, copies
the KV back and registers it under its hash, so the prefix is reloaded instead of recomputed.

It behaves exactly as the handbook chapter's `tiered.py` (the problem's statement spells the rules
out for students), except for the chapter's one crash: the chapter reads `host[h]` after the
allocation for the host hits, whose offloads may already have evicted `h` when the host tier is
small (a `KeyError`). This pool keeps the copies it found during the walk and reloads from those.

- `allocate(n)`: for each of the first `n` blocks of `free_queue` that carries a hash not in
  `host`, copy its KV to the most recently used end of `host` and count it in `num_offloaded`;
  when `host` then holds more than `host_capacity` entries, drop the least recently used one (with
  capacity 0 the copy is made, counted and dropped at once). Nothing happens if fewer than `n`
  blocks are free.
- `lookup(token_ids)`: walk the block hashes: a GPU hit, else a host hit (not moved yet), else
  stop. GPU hits that are free are taken out of `free_queue` (protected) so that allocating blocks
  for the host hits cannot reuse them. If that allocation fails, only the hits before the first
  host hit are kept. Each host hit is copied into the next allocated block, its `host` entry moved
  to the most recently used end (if it is still there), and the block registered under the hash,
  free but cached at the end of `free_queue`. Then the protected blocks go back to the end of
  `free_queue`, in prefix order. Counters in tokens, as in the parent.
"""

from __future__ import annotations

from collections import OrderedDict
from itertools import islice
from typing import Sequence

from prefix_cache import PrefixCachingBlockPool

__all__ = ["TieredPrefixCachingBlockPool"]


def _to_host(t):
    """A CPU copy of one KV tensor. From CUDA it goes into pinned memory without blocking the CPU
    (a CPU reader of `host` must synchronize the stream first; the pool itself never reads it on
    the CPU)."""
    if getattr(t, "is_cuda", False):
        import torch

        dst = torch.empty(t.shape, dtype=t.dtype, device="cpu", pin_memory=True)
        dst.copy_(t, non_blocking=True)
        return dst
    return t.clone()


def _copy_into(dst, src) -> None:
    """Copy a host copy back into a KV block. On CUDA the copy from pinned memory is queued on the
    current stream, the one the attention that reads the block runs on, so it is ordered before
    that use without a host-side wait; the offload that filled `src` was queued on the same stream
    earlier, so it is complete by then too."""
    if getattr(dst, "is_cuda", False):
        dst.copy_(src, non_blocking=True)
    else:
        dst.copy_(src)


class TieredPrefixCachingBlockPool(PrefixCachingBlockPool):
    """`PrefixCachingBlockPool` plus a host-memory tier of at most `host_capacity_blocks` blocks.

    `kv` (an object with `k[layer][block]` and `v[layer][block]`) is bound after the engine is built:
    `pool.kv = engine.kv`. `host` maps a block hash to that block's per-layer `(K, V)` copies, least
    recently used first.
    """

    def __init__(self, num_blocks: int, block_size: int, host_capacity_blocks: int):
        super().__init__(num_blocks, block_size)
        if host_capacity_blocks < 0:
            raise ValueError(f"host_capacity_blocks must be >= 0, got {host_capacity_blocks}")
        self.host_capacity = host_capacity_blocks
        self.host: OrderedDict[int, list[tuple]] = OrderedDict()
        self.kv = None
        self.num_offloaded = 0
        self.num_loaded = 0

    # -- offload -------------------------------------------------------------------------------

    def allocate(self, n: int) -> list[int] | None:
        if 0 <= n <= len(self.free_queue):
            for b in list(islice(self.free_queue, n)):  # the blocks about to be reused
                h = self.block_hash[b]
                if h is not None and h not in self.host:
                    self._offload(b, h)
        return super().allocate(n)

    def _offload(self, block: int, h: int) -> None:
        kv = self.kv
        self.host[h] = [(_to_host(kv.k[layer][block]), _to_host(kv.v[layer][block]))
                        for layer in range(len(kv.k))]
        self.num_offloaded += 1
        if len(self.host) > self.host_capacity:
            self.host.popitem(last=False)

    # -- lookup and reload ---------------------------------------------------------------------

    def lookup(self, token_ids: Sequence[int]) -> list[int]:
        # One entry per hit: (hash, GPU block or None, host copy or None). The host copies are held
        # here because the offloads of the allocation below may evict them from `host`.
        plan = []
        for h in self.block_hashes(token_ids):
            b = self.hash_to_block.get(h)
            if b is not None:
                plan.append((h, b, None))
            elif h in self.host:
                plan.append((h, None, self.host[h]))
            else:
                break

        protected = [b for _, b, _ in plan if b is not None and self.ref_cnt[b] == 0]
        for b in protected:
            del self.free_queue[b]
        need = sum(1 for _, b, _ in plan if b is None)
        fresh = self.allocate(need) if need else []
        if fresh is None:  # no room for the reloads: keep the GPU hits before the first host hit
            fresh = []
            plan = plan[:next(i for i, (_, b, _) in enumerate(plan) if b is None)]

        new_blocks = iter(fresh)
        hit = []
        for h, b, copy in plan:
            if b is None:
                b = next(new_blocks)
                self._load(b, copy)
                if h in self.host:
                    self.host.move_to_end(h)
                self.register(b, h)
                # Free but cached, like any other hit: the scheduler's `touch` takes it next.
                self.ref_cnt[b] = 0
                self.free_queue[b] = None
            hit.append(b)
        for b in protected:
            self.free_queue[b] = None
        self.num_queries += len(token_ids)
        self.num_hits += len(hit) * self.block_size
        return hit

    def _load(self, block: int, copy: list[tuple]) -> None:
        kv = self.kv
        for layer, (k, v) in enumerate(copy):
            _copy_into(kv.k[layer][block], k)
            _copy_into(kv.v[layer][block], v)
        self.num_loaded += 1
