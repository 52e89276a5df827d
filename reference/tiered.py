"""Problem 143, the reference answer: a prefix cache with two tiers, GPU blocks and host memory.

A plain prefix-caching pool loses a cached block the moment `allocate` reuses it. This pool first
copies the block's KV (every layer) into `host`, a bounded LRU store in CPU memory keyed by the
block's hash. A later `lookup` that misses on the GPU but hits in `host` takes a fresh block, copies
the KV back and registers it under its hash, so the prefix is reloaded instead of recomputed.

The rules, which the problem's statement spells out for students:

- Offload: when `allocate` is about to reuse a free block that carries a hash not yet in `host`,
  copy its KV into `host` (most recently used end) and count it in `num_offloaded`; then evict the
  least recently used entries while `host` holds more than `host_capacity`. A hash already in
  `host` is not copied again.
- Lookup: walk the query's block hashes; each is a GPU hit (in `hash_to_block`) or a host hit (in
  `host`; a use, so it moves to the most recently used end); stop at the first miss in both.
- Protection: GPU hits that are free (`ref_cnt == 0`) sit in `free_queue`, so allocating blocks for
  the host hits could reuse and overwrite them. They are taken out of `free_queue` while that
  allocation runs.
- When the allocation fails, only the prefix before the first host hit is returned.
- Reloaded blocks are registered under their hash and, like the protected blocks, end up free but
  cached: every returned block that was free before the lookup, or was allocated by it, is freed
  again in prefix order (so they sit at the most recently used end of `free_queue`).
- `num_hits` counts every returned block (GPU or host hit), `num_loaded` the reloaded ones.
"""

from __future__ import annotations

from collections import OrderedDict
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
        if n < 0 or len(self.free_queue) < n:
            return super().allocate(n)
        for block, _ in zip(self.free_queue, range(n)):
            h = self.block_hash[block]
            if h is not None and h not in self.host:
                self._offload(block, h)
        return super().allocate(n)

    def _offload(self, block: int, h: int) -> None:
        if self.host_capacity == 0:
            return
        kv = self.kv
        self.host[h] = [(_to_host(kv.k[layer][block]), _to_host(kv.v[layer][block]))
                        for layer in range(len(kv.k))]
        self.num_offloaded += 1
        while len(self.host) > self.host_capacity:
            self.host.popitem(last=False)

    # -- lookup and reload ---------------------------------------------------------------------

    def lookup(self, token_ids: Sequence[int]) -> list[int]:
        hashes = self.block_hashes(token_ids)
        self.num_queries += len(hashes)

        # One entry per hit: (hash, GPU block or None, host copy or None). The host copies are held
        # here because offloads during the allocation below may evict them from `host`.
        hits = []
        for h in hashes:
            block = self.hash_to_block.get(h)
            if block is not None:
                hits.append((h, block, None))
            elif h in self.host:
                self.host.move_to_end(h)
                hits.append((h, None, self.host[h]))
            else:
                break

        num_host_hits = sum(1 for _, block, _ in hits if block is None)
        if num_host_hits == 0:
            self.num_hits += len(hits)
            return [block for _, block, _ in hits]

        protected = [block for _, block, _ in hits if block is not None and self.ref_cnt[block] == 0]
        self.touch(protected)
        fresh = self.allocate(num_host_hits)

        if fresh is None:
            self.free(protected)
            first_host = next(i for i, (_, block, _) in enumerate(hits) if block is None)
            self.num_hits += first_host
            return [block for _, block, _ in hits[:first_host]]

        result = []
        new_blocks = iter(fresh)
        for h, block, copy in hits:
            if block is None:
                block = next(new_blocks)
                self._load(block, copy)
                self.register(block, h)
            result.append(block)

        # Everything this lookup took goes back as free but cached, in prefix order.
        taken = set(protected) | set(fresh)
        self.free([block for block in result if block in taken])
        self.num_hits += len(result)
        return result

    def _load(self, block: int, copy: list[tuple]) -> None:
        kv = self.kv
        for layer, (k, v) in enumerate(copy):
            _copy_into(kv.k[layer][block], k)
            _copy_into(kv.v[layer][block], v)
        self.num_loaded += 1
