# A correct solution that protects free GPU hits by parking them outside free_queue (instead of
# touch/free) and puts everything back by hand, in prefix order.
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
        if 0 <= n <= len(self.free_queue) and self.host_capacity > 0:
            for block in list(islice(self.free_queue, n)):
                h = self.block_hash[block]
                if h is None or h in self.host:
                    continue
                layers = range(len(self.kv.k))
                self.host[h] = [(host_copy(self.kv.k[i][block]), host_copy(self.kv.v[i][block])) for i in layers]
                self.num_offloaded += 1
                if len(self.host) > self.host_capacity:
                    self.host.popitem(last=False)
        return super().allocate(n)

    def lookup(self, token_ids):
        hashes = self.block_hashes(token_ids)
        self.num_queries += len(hashes)
        found = []      # (hash, GPU block or None)
        saved = {}      # hash -> host copy, grabbed now: our own allocation may evict it
        for h in hashes:
            block = self.hash_to_block.get(h)
            if block is None:
                if h not in self.host:
                    break
                self.host.move_to_end(h)
                saved[h] = self.host[h]
            found.append((h, block))

        if not saved:
            self.num_hits += len(found)
            return [block for _, block in found]

        parked = [block for _, block in found if block is not None and block in self.free_queue]
        for block in parked:
            del self.free_queue[block]
        fresh = self.allocate(len(saved))

        if fresh is None:
            for block in parked:
                self.free_queue[block] = None
            prefix = []
            for h, block in found:
                if block is None:
                    break
                prefix.append(block)
            self.num_hits += len(prefix)
            return prefix

        fresh_iter = iter(fresh)
        result = []
        for h, block in found:
            if block is None:
                block = next(fresh_iter)
                for i, (k, v) in enumerate(saved[h]):
                    self.kv.k[i][block].copy_(k)
                    self.kv.v[i][block].copy_(v)
                self.num_loaded += 1
                self.register(block, h)
            result.append(block)

        parked_set, fresh_set = set(parked), set(fresh)
        for block in result:
            if block in parked_set:
                self.free_queue[block] = None
            elif block in fresh_set:
                self.free([block])
        self.num_hits += len(result)
        return result
