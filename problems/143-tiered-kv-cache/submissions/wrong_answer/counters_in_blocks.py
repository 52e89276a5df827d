# expect: WA
# caught-by: public/test_examples.py::test_example_reload_from_host
# bug: counts num_queries and num_hits in blocks; the handbook counts them in tokens
from collections import OrderedDict

from prefix_cache import PrefixCachingBlockPool


class TieredPrefixCachingBlockPool(PrefixCachingBlockPool):
    def __init__(self, num_blocks: int, block_size: int, host_capacity_blocks: int):
        super().__init__(num_blocks, block_size)
        self.kv = None
        self.host: OrderedDict[int, list] = OrderedDict()
        self.host_capacity = host_capacity_blocks
        self.num_offloaded = 0
        self.num_loaded = 0

    def _save(self, b):
        def copy(t):
            c = t.detach().to("cpu", copy=True)
            return c.pin_memory() if t.is_cuda else c

        return [(copy(self.kv.k[l][b]), copy(self.kv.v[l][b])) for l in range(len(self.kv.k))]

    def allocate(self, n: int):
        if n > len(self.free_queue):
            return None
        about_to_be_reused = list(self.free_queue)[:n]
        for b in about_to_be_reused:
            h = self.block_hash[b]
            if h is None or h in self.host:
                continue
            self.host[h] = self._save(b)
            self.num_offloaded += 1
            if len(self.host) > self.host_capacity:
                self.host.popitem(last=False)
        return super().allocate(n)

    def lookup(self, token_ids):
        # 1. plan: (hash, GPU block or None, host copies or None) per hit, up to the first miss
        plan = []
        for h in self.block_hashes(token_ids):
            b = self.hash_to_block.get(h)
            if b is not None:
                plan.append((h, b, None))
            elif h in self.host:
                plan.append((h, None, self.host[h]))
            else:
                break

        # 2. set the free GPU hits aside so the allocation below cannot reuse them
        set_aside = [b for _, b, _ in plan if b is not None and self.ref_cnt[b] == 0]
        for b in set_aside:
            self.free_queue.pop(b)

        # 3. one fresh block per host hit; without them, keep the GPU hits before the first host hit
        num_host = len([1 for _, b, _ in plan if b is None])
        fresh = self.allocate(num_host) if num_host else []
        if fresh is None:
            fresh = []
            for i, (_, b, _) in enumerate(plan):
                if b is None:
                    plan = plan[:i]
                    break

        # 4. reload the host hits, registering each block as free but cached
        result = []
        fresh_iter = iter(fresh)
        for h, b, copies in plan:
            if b is None:
                b = next(fresh_iter)
                for l, (k, v) in enumerate(copies):
                    self.kv.k[l][b].copy_(k)
                    self.kv.v[l][b].copy_(v)
                if h in self.host:
                    self.host.move_to_end(h)
                self.block_hash[b] = h
                self.hash_to_block[h] = b
                self.ref_cnt[b] = 0
                self.free_queue[b] = None
                self.num_loaded += 1
            result.append(b)

        # 5. the set-aside blocks go back to the end of the queue
        for b in set_aside:
            self.free_queue[b] = None
        self.num_queries += len(token_ids) // self.block_size
        self.num_hits += len(result)
        return result
