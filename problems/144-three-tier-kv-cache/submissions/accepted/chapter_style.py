# A correct solution in the chapter's own style: plain OrderedDicts and inline bookkeeping, the
# two-tier pool's lookup extended by one more tier. Write-through hooks cache_blocks (the blocks
# the parent registered are the ones whose hash appeared) and the reloads, which assign
# block_hash / hash_to_block themselves. The lookup counts free blocks before it reads any file.
import os
from collections import OrderedDict

from prefix_cache import PrefixCachingBlockPool


class ThreeTierPrefixCachingBlockPool(PrefixCachingBlockPool):
    def __init__(self, num_blocks: int, block_size: int, host_capacity_blocks: int, disk_dir,
                 disk_capacity_blocks: int, write_policy: str = "write_back"):
        super().__init__(num_blocks, block_size)
        self.kv = None
        self.host: OrderedDict = OrderedDict()
        self.host_capacity = host_capacity_blocks
        self.disk: OrderedDict = OrderedDict()
        self.disk_capacity = disk_capacity_blocks
        self.disk_dir = str(disk_dir)
        os.makedirs(self.disk_dir, exist_ok=True)
        self.write_through = write_policy == "write_through"
        self.write_policy = write_policy
        self.num_gpu_hits = 0
        self.num_host_hits = 0
        self.num_disk_hits = 0
        self.num_host_writes = 0
        self.num_disk_writes = 0
        self.num_loaded_from_host = 0
        self.num_loaded_from_disk = 0

    def save_file(self, tensors, path):
        from safetensors.torch import save_file
        save_file(tensors, path)

    def load_file(self, path):
        from safetensors.torch import load_file
        return load_file(path)

    def _save(self, b):
        def copy(t):
            if t.is_cuda:
                c = t.detach().to("cpu", copy=True).pin_memory()
                return c
            return t.detach().to("cpu", copy=True)
        return [(copy(self.kv.k[l][b]), copy(self.kv.v[l][b])) for l in range(len(self.kv.k))]

    def _offload(self, h, kv_copy):
        self.host[h] = kv_copy
        self.num_host_writes += 1
        if len(self.host) > self.host_capacity:
            old_h, old_copy = self.host.popitem(last=False)
            if not self.write_through and old_h not in self.disk:
                self._spill(old_h, old_copy)

    def _spill(self, h, kv_copy):
        if kv_copy[0][0].is_pinned():
            import torch
            torch.cuda.current_stream().synchronize()
        tensors = {}
        for l, (k, v) in enumerate(kv_copy):
            tensors["k.%d" % l] = k
            tensors["v.%d" % l] = v
        path = os.path.join(self.disk_dir, f"{h:016x}.safetensors")
        self.save_file(tensors, path)
        self.disk[h] = path
        self.num_disk_writes += 1
        while len(self.disk) > self.disk_capacity:
            _, gone = self.disk.popitem(last=False)
            os.unlink(gone)

    def _cached(self, b, h):
        if h not in self.host:
            self._offload(h, self._save(b))
            if h not in self.disk:
                # The copy just made may already be gone from a small host tier.
                self._spill(h, self._save(b))
        elif h not in self.disk:
            self._spill(h, self.host[h])

    def allocate(self, n: int):
        if n > len(self.free_queue):
            return None
        if not self.write_through:
            for b in list(self.free_queue)[:n]:
                h = self.block_hash[b]
                if h is not None and h not in self.host:
                    self._offload(h, self._save(b))
        return super().allocate(n)

    def cache_blocks(self, token_ids, block_ids, num_computed):
        if not self.write_through:
            return super().cache_blocks(token_ids, block_ids, num_computed)
        before = [self.block_hash[b] for b in block_ids]
        super().cache_blocks(token_ids, block_ids, num_computed)
        for b, old in zip(block_ids, before):
            if old is None and self.block_hash[b] is not None:
                self._cached(b, self.block_hash[b])

    def lookup(self, token_ids):
        hashes = self.block_hashes(token_ids)
        plan = []
        for h in hashes:
            if h in self.hash_to_block:
                plan.append(("gpu", h, self.hash_to_block[h]))
            elif h in self.host:
                plan.append(("host", h, self.host[h]))
            elif h in self.disk:
                plan.append(("disk", h, self.disk[h]))
            else:
                break

        protected = [b for where, _, b in plan if where == "gpu" and self.ref_cnt[b] == 0]
        for b in protected:
            del self.free_queue[b]
        n_load = len([p for p in plan if p[0] != "gpu"])
        if n_load > len(self.free_queue):
            for i, p in enumerate(plan):
                if p[0] != "gpu":
                    plan = plan[:i]
                    break
            n_load = 0
        loaded = {}
        for where, h, path in plan:
            if where == "disk":
                t = self.load_file(path)
                loaded[h] = [(t["k.%d" % l], t["v.%d" % l]) for l in range(len(self.kv.k))]
        new_blocks = self.allocate(n_load) if n_load else []

        result = []
        j = 0
        for where, h, x in plan:
            if where == "gpu":
                result.append(x)
                self.num_gpu_hits += self.block_size
                continue
            b = new_blocks[j]
            j += 1
            src = x if where == "host" else loaded[h]
            for l in range(len(self.kv.k)):
                self.kv.k[l][b].copy_(src[l][0])
                self.kv.v[l][b].copy_(src[l][1])
            tier = self.host if where == "host" else self.disk
            if h in tier:
                tier.move_to_end(h)
            self.block_hash[b] = h
            self.hash_to_block[h] = b
            if self.write_through:
                self._cached(b, h)
            self.ref_cnt[b] = 0
            self.free_queue[b] = None
            if where == "host":
                self.num_loaded_from_host += 1
                self.num_host_hits += self.block_size
            else:
                self.num_loaded_from_disk += 1
                self.num_disk_hits += self.block_size
            result.append(b)
        for b in protected:
            self.free_queue[b] = None
        self.num_queries += len(token_ids)
        self.num_hits += len(result) * self.block_size
        return result
