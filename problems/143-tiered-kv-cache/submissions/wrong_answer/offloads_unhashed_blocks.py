# expect: WA
# caught-by: hidden/test_offload_rules.py::test_only_hashed_blocks_offloaded
# bug: also copies blocks without a hash (partial or never-registered blocks) to host memory, under the key None
from collections import OrderedDict

from prefix_cache import PrefixCachingBlockPool


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
            for block in list(self.free_queue)[:n]:
                h = self.block_hash[block]
                if h not in self.host:
                    self._offload(block, h)
        return super().allocate(n)

    def _offload(self, block, h):
        if self.host_capacity == 0:
            return
        kv = self.kv
        self.host[h] = [(kv.k[l][block].clone(), kv.v[l][block].clone()) for l in range(len(kv.k))]
        self.num_offloaded += 1
        while len(self.host) > self.host_capacity:
            self.host.popitem(last=False)

    def lookup(self, token_ids):
        hashes = self.block_hashes(token_ids)
        self.num_queries += len(hashes)
        hits = []  # (hash, GPU block or None, host copy or None)
        for h in hashes:
            if h in self.hash_to_block:
                hits.append((h, self.hash_to_block[h], None))
            elif h in self.host:
                self.host.move_to_end(h)
                hits.append((h, None, self.host[h]))
            else:
                break

        num_host = sum(1 for _, b, _ in hits if b is None)
        if num_host == 0:
            self.num_hits += len(hits)
            return [b for _, b, _ in hits]

        protected = [b for _, b, _ in hits if b is not None and self.ref_cnt[b] == 0]
        self.touch(protected)
        fresh = self.allocate(num_host)
        if fresh is None:
            self.free(protected)
            prefix = []
            for _, b, _ in hits:
                if b is None:
                    break
                prefix.append(b)
            self.num_hits += len(prefix)
            return prefix

        result = []
        new_blocks = iter(fresh)
        for h, b, copy in hits:
            if b is None:
                b = next(new_blocks)
                for l, (k, v) in enumerate(copy):
                    self.kv.k[l][b].copy_(k)
                    self.kv.v[l][b].copy_(v)
                self.num_loaded += 1
                self.register(b, h)
            result.append(b)
        taken = set(protected) | set(fresh)
        self.free([b for b in result if b in taken])
        self.num_hits += len(result)
        return result
