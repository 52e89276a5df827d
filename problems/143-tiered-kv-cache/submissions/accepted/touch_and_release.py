# A correct solution that protects the free GPU hits with the pool's own reference counting: it
# touches them before allocating for the host hits and releases them afterwards, one block per
# `free` call so that the order they return to free_queue is explicit.
from collections import OrderedDict
from itertools import islice

from prefix_cache import PrefixCachingBlockPool


def host_copy(t):
    # A real copy in CPU memory whatever device the cache is on (`.cpu()` alone is a no-op on CPU);
    # from a GPU, into pinned memory with a non-blocking copy queued on the current stream.
    if getattr(t, "is_cuda", False):
        import torch
        dst = torch.empty(t.shape, dtype=t.dtype, pin_memory=True)
        return dst.copy_(t, non_blocking=True)
    return t.to("cpu", copy=True)


class TieredPrefixCachingBlockPool(PrefixCachingBlockPool):
    def __init__(self, num_blocks, block_size, host_capacity_blocks):
        super().__init__(num_blocks, block_size)
        self.host_capacity = host_capacity_blocks
        self.host = OrderedDict()
        self.kv = None
        self.num_offloaded = 0
        self.num_loaded = 0

    def allocate(self, n):
        if 0 <= n <= len(self.free_queue):
            for block in list(islice(self.free_queue, n)):
                h = self.block_hash[block]
                if h is not None and h not in self.host:
                    layers = range(len(self.kv.k))
                    self.host[h] = [(host_copy(self.kv.k[i][block]), host_copy(self.kv.v[i][block]))
                                    for i in layers]
                    self.num_offloaded += 1
                    if len(self.host) > self.host_capacity:
                        self.host.popitem(last=False)
        return super().allocate(n)

    def _release_each(self, blocks):
        for block in blocks:
            self.free([block])

    def lookup(self, token_ids):
        found = []      # (hash, GPU block or None)
        saved = {}      # hash -> host copy, grabbed now: our own allocation may evict it
        for h in self.block_hashes(token_ids):
            block = self.hash_to_block.get(h)
            if block is None:
                if h not in self.host:
                    break
                saved[h] = self.host[h]
            found.append((h, block))

        idle = [block for _, block in found if block is not None and self.ref_cnt[block] == 0]
        self.touch(idle)
        fresh = self.allocate(len(saved)) if saved else []
        if fresh is None:
            fresh = []
            first_host = next(i for i, (_, block) in enumerate(found) if block is None)
            found = found[:first_host]

        result, reloaded = [], []
        fresh_iter = iter(fresh)
        for h, block in found:
            if block is None:
                block = next(fresh_iter)
                for i, (k, v) in enumerate(saved[h]):
                    self.kv.k[i][block].copy_(k)
                    self.kv.v[i][block].copy_(v)
                if h in self.host:
                    self.host.move_to_end(h)
                self.register(block, h)
                self.num_loaded += 1
                reloaded.append(block)
            result.append(block)

        self._release_each(reloaded)
        self._release_each(idle)
        self.num_queries += len(token_ids)
        self.num_hits += len(result) * self.block_size
        return result
