# A correct solution built on one small LRU class used for both lower tiers: a tier that grows
# past its capacity hands its oldest entry to a callback (host: on to disk under write-back; disk:
# delete the file). The walk reads each disk hit's file as soon as it finds it, so the
# allocation's evictions cannot take it away; the allocation's `None` decides what is kept.
import os
from collections import OrderedDict

from prefix_cache import PrefixCachingBlockPool


class LRUTier(OrderedDict):
    def __init__(self, capacity, on_drop):
        super().__init__()
        self.capacity = capacity
        self.on_drop = on_drop

    def put(self, key, value):
        self[key] = value
        if len(self) > self.capacity:
            self.on_drop(*self.popitem(last=False))

    def used(self, key):
        if key in self:
            self.move_to_end(key)


def to_cpu(t):
    if getattr(t, "is_cuda", False):
        return t.detach().to("cpu", copy=True).pin_memory()
    return t.detach().to("cpu", copy=True)


class ThreeTierPrefixCachingBlockPool(PrefixCachingBlockPool):
    def __init__(self, num_blocks, block_size, host_capacity_blocks, disk_dir, disk_capacity_blocks,
                 write_policy="write_back"):
        super().__init__(num_blocks, block_size)
        assert write_policy in ("write_back", "write_through")
        self.write_policy = write_policy
        self.host_capacity = host_capacity_blocks
        self.disk_capacity = disk_capacity_blocks
        self.disk_dir = os.fspath(disk_dir)
        os.makedirs(self.disk_dir, exist_ok=True)
        self.host = LRUTier(host_capacity_blocks, self._host_dropped)
        self.disk = LRUTier(disk_capacity_blocks, lambda h, path: os.remove(path))
        self.kv = None
        self.num_gpu_hits = self.num_host_hits = self.num_disk_hits = 0
        self.num_host_writes = self.num_disk_writes = 0
        self.num_loaded_from_host = self.num_loaded_from_disk = 0

    def save_file(self, tensors, path):
        from safetensors.torch import save_file
        save_file(tensors, path)

    def load_file(self, path):
        from safetensors.torch import load_file
        return load_file(path)

    # ---- moving copies down

    def _snapshot(self, b):
        return [(to_cpu(self.kv.k[l][b]), to_cpu(self.kv.v[l][b])) for l in range(len(self.kv.k))]

    def _to_host(self, h, copies):
        self.num_host_writes += 1
        self.host.put(h, copies)

    def _host_dropped(self, h, copies):
        if self.write_policy == "write_back" and h not in self.disk:
            self._to_disk(h, copies)

    def _to_disk(self, h, copies):
        if copies and getattr(copies[0][0], "is_pinned", lambda: False)():
            import torch
            torch.cuda.synchronize()  # the pinned copies may still be on their way from the GPU
        named = {}
        for l, (k, v) in enumerate(copies):
            named[f"k.{l}"], named[f"v.{l}"] = k, v
        path = os.path.join(self.disk_dir, "%016x.safetensors" % h)
        self.save_file(named, path)
        self.num_disk_writes += 1
        self.disk.put(h, path)

    def _from_disk(self, path):
        named = self.load_file(path)
        return [(named[f"k.{l}"], named[f"v.{l}"]) for l in range(len(self.kv.k))]

    def allocate(self, n):
        if self.write_policy == "write_back" and 0 <= n <= len(self.free_queue):
            for i, b in enumerate(self.free_queue):
                if i == n:
                    break
                h = self.block_hash[b]
                if h is not None and h not in self.host:
                    self._to_host(h, self._snapshot(b))
        return super().allocate(n)

    def register(self, block, h):
        super().register(block, h)
        if self.write_policy != "write_through":
            return
        copies = self.host.get(h)
        if copies is None:
            copies = self._snapshot(block)
            self._to_host(h, copies)
        if h not in self.disk:
            self._to_disk(h, copies)

    # ---- lookup

    def lookup(self, token_ids):
        found = []  # [hash, GPU block or None, tier name or None, copies or None]
        for h in self.block_hashes(token_ids):
            if h in self.hash_to_block:
                found.append((h, self.hash_to_block[h], None, None))
            elif h in self.host:
                found.append((h, None, "host", self.host[h]))
            elif h in self.disk:
                found.append((h, None, "disk", self._from_disk(self.disk[h])))
            else:
                break

        aside = [b for _, b, _, _ in found if b is not None and self.ref_cnt[b] == 0]
        for b in aside:
            self.free_queue.pop(b)
        wanted = [x for x in found if x[1] is None]
        fresh = self.allocate(len(wanted)) if wanted else []
        if fresh is None:
            first = next(i for i, x in enumerate(found) if x[1] is None)
            found, fresh = found[:first], []

        fresh = list(fresh)
        blocks = []
        for h, b, tier, copies in found:
            if b is None:
                b = fresh.pop(0)
                for l, (k, v) in enumerate(copies):
                    self.kv.k[l][b].copy_(k)
                    self.kv.v[l][b].copy_(v)
                (self.host if tier == "host" else self.disk).used(h)
                self.register(b, h)
                self.ref_cnt[b] = 0
                self.free_queue[b] = None
                if tier == "host":
                    self.num_loaded_from_host += 1
                    self.num_host_hits += self.block_size
                else:
                    self.num_loaded_from_disk += 1
                    self.num_disk_hits += self.block_size
            else:
                self.num_gpu_hits += self.block_size
            blocks.append(b)
        for b in aside:
            self.free_queue[b] = None
        self.num_queries += len(token_ids)
        self.num_hits += self.block_size * len(blocks)
        return blocks
