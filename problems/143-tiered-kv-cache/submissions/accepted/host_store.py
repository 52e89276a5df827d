# A correct solution built around a small LRU store class for the host tier; offloading happens
# in the parent's `_forget` hook, which `allocate` calls for each block it reuses.
from collections import OrderedDict

from prefix_cache import PrefixCachingBlockPool


class HostStore(OrderedDict):
    """block hash -> per-layer (K, V) copies in CPU memory, least recently used first."""

    def __init__(self, capacity):
        super().__init__()
        self.capacity = capacity

    def put(self, h, copies):
        self[h] = copies
        while len(self) > self.capacity:
            self.popitem(last=False)

    def use(self, h):
        self.move_to_end(h)
        return self[h]


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

    def _forget(self, block):
        h = self.block_hash[block]
        if h is not None and h not in self.host and self.host_capacity > 0:
            kv = self.kv
            self.host.put(h, [(_save(kv.k[l][block]), _save(kv.v[l][block])) for l in range(len(kv.k))])
            self.num_offloaded += 1
        super()._forget(block)

    def _walk(self, hashes):
        """How many leading hashes are cached in either tier; host hits are used on the way."""
        n = 0
        for h in hashes:
            if h in self.hash_to_block:
                n += 1
            elif h in self.host:
                self.host.use(h)
                n += 1
            else:
                break
        return n

    def lookup(self, token_ids):
        hashes = self.block_hashes(token_ids)
        self.num_queries += len(hashes)
        hashes = hashes[:self._walk(hashes)]
        gpu = {i: self.hash_to_block[h] for i, h in enumerate(hashes) if h in self.hash_to_block}
        reload = {i: self.host[h] for i, h in enumerate(hashes) if i not in gpu}
        if not reload:
            self.num_hits += len(hashes)
            return [gpu[i] for i in range(len(hashes))]

        idle = [b for b in gpu.values() if self.ref_cnt[b] == 0]
        self.touch(idle)
        new = self.allocate(len(reload))
        if new is None:
            self.free(idle)
            cut = min(reload)
            self.num_hits += cut
            return [gpu[i] for i in range(cut)]

        table = []
        new = list(new)
        for i, h in enumerate(hashes):
            if i in gpu:
                table.append(gpu[i])
                continue
            block = new.pop(0)
            for layer, (k, v) in enumerate(reload[i]):
                self.kv.k[layer][block].copy_(k)
                self.kv.v[layer][block].copy_(v)
            self.register(block, h)
            self.num_loaded += 1
            table.append(block)
        release = set(idle) | {table[i] for i in reload}
        self.free([b for b in table if b in release])
        self.num_hits += len(table)
        return table
