# A correct solution built around a small LRU store class for the host tier and a lookup split
# into three helpers: the walk, the reload and the bookkeeping of free_queue.
from collections import OrderedDict

from prefix_cache import PrefixCachingBlockPool


class HostStore(OrderedDict):
    """block hash -> per-layer (K, V) copies in CPU memory, least recently used first."""

    def __init__(self, capacity):
        super().__init__()
        self.capacity = capacity

    def put(self, h, copies):
        self[h] = copies
        if len(self) > self.capacity:
            self.popitem(last=False)

    def used(self, h):
        if h in self:
            self.move_to_end(h)


def _save(t):
    if t.is_cuda:
        # Pinned memory: what the GPU can copy to and from asynchronously.
        return t.detach().to("cpu", copy=True).pin_memory()
    return t.detach().to("cpu", copy=True)


class TieredPrefixCachingBlockPool(PrefixCachingBlockPool):
    def __init__(self, num_blocks, block_size, host_capacity_blocks):
        super().__init__(num_blocks, block_size)
        self.host_capacity = host_capacity_blocks
        self.host = HostStore(host_capacity_blocks)
        self.kv = None
        self.num_offloaded = 0
        self.num_loaded = 0

    def allocate(self, n):
        if n <= len(self.free_queue):
            victims = []
            for block in self.free_queue:
                if len(victims) == n:
                    break
                victims.append(block)
            for block in victims:
                h = self.block_hash[block]
                if h is not None and h not in self.host:
                    kv = self.kv
                    self.host.put(h, [(_save(kv.k[l][block]), _save(kv.v[l][block])) for l in range(len(kv.k))])
                    self.num_offloaded += 1
        return super().allocate(n)

    def _walk(self, token_ids):
        """Indexed hits up to the first miss: GPU blocks by position, host copies by position."""
        gpu, host, hashes = {}, {}, []
        for i, h in enumerate(self.block_hashes(token_ids)):
            if h in self.hash_to_block:
                gpu[i] = self.hash_to_block[h]
            elif h in self.host:
                host[i] = self.host[h]
            else:
                break
            hashes.append(h)
        return hashes, gpu, host

    def _reload(self, block, h, copies):
        for layer, (k, v) in enumerate(copies):
            self.kv.k[layer][block].copy_(k)
            self.kv.v[layer][block].copy_(v)
        self.host.used(h)
        self.register(block, h)
        self.free_queue[block] = None
        self.ref_cnt[block] = 0
        self.num_loaded += 1

    def lookup(self, token_ids):
        hashes, gpu, host = self._walk(token_ids)
        idle = [gpu[i] for i in sorted(gpu) if self.ref_cnt[gpu[i]] == 0]
        for block in idle:
            del self.free_queue[block]
        new = self.allocate(len(host)) if host else []
        if new is None:
            new = []
            hashes = hashes[:min(host)]
        table = []
        for i, h in enumerate(hashes):
            if i in gpu:
                table.append(gpu[i])
            else:
                block = new[len(table) - sum(1 for j in range(i) if j in gpu)]
                self._reload(block, h, host[i])
                table.append(block)
        for block in idle:
            self.free_queue[block] = None
        self.num_queries += len(token_ids)
        self.num_hits += self.block_size * len(table)
        return table
