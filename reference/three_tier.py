"""Problem 144, the reference answer: a prefix cache with three tiers, GPU blocks, host memory and
disk.

It extends the chapter's two-tier rules (problem 143, `tiered.py`) one level down, with the same
rule at every level: a tier holds copies keyed by block hash, least recently used first, and when
it grows past its capacity it drops its least recently used entry.

- `write_policy="write_back"` (the default) copies a block down only when a tier lets it go:
  `allocate` copies a reused cached block to host (unless host has its hash), exactly as in 143;
  an entry host drops is written to disk (unless disk has its hash; neither rewritten nor
  moved then); an entry disk drops has its file deleted.
- `write_policy="write_through"` copies a block down as soon as it is cached: every time a block
  gets its hash (`cache_blocks`, or a reload in `lookup`) it is copied to host unless host has its
  hash, and written to disk unless disk has it. Evictions then copy nothing: `allocate` is the
  parent's, and a host entry that is dropped is simply gone from host.
- `lookup(token_ids)` walks the block hashes: a GPU hit, else a host hit, else a disk hit, else
  stop. Free GPU hits are set aside from `free_queue` (every lookup), one fresh block is allocated
  per host or disk hit, each is filled with the KV that its tier held when the walk found it,
  its tier entry is moved to the most recently used end (if still there), and the block is
  registered, free but cached, at the end of `free_queue`; then the set-aside blocks go back, in
  prefix order. If there are too few free blocks, only the hits before the first host or disk hit
  are returned and nothing is read, allocated or copied.

A disk hit is copied straight into its GPU block; it is not put into host on the way (host is not
touched by it at all under write-back). That keeps the same rule at every level (a hit is copied
into a fresh GPU block and its tier keeps its copy, marked used), and it keeps a read from causing
writes: promoting the block into host would make host drop an entry, which write-back would then
write to disk, which may make disk delete a file, all to serve a read. The block is on the GPU
now; if it is reused later, `allocate` copies it to host by the ordinary rule, and since disk still
holds it, host letting it go costs no second write. (The file's tensors do pass through CPU memory:
`load_file` returns CPU tensors, copied into the GPU block right away.)

The disk tier is one safetensors file per block, `<disk_dir>/<hash as 16 hex digits>.safetensors`,
holding tensors `k.<layer>` and `v.<layer>`. All file I/O goes through `save_file(tensors, path)`
and `load_file(path)`, safetensors' own signatures, so a test (or the browser, which has no torch)
can put a pure-Python stand-in on the pool: `pool.save_file = ...; pool.load_file = ...`.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from itertools import islice
from typing import Sequence

from prefix_cache import PrefixCachingBlockPool

__all__ = ["ThreeTierPrefixCachingBlockPool", "WRITE_POLICIES"]

WRITE_POLICIES = ("write_back", "write_through")
_GPU, _HOST, _DISK = "gpu", "host", "disk"


def _to_host(t):
    """A CPU copy of one KV tensor; from CUDA into pinned memory, queued on the current stream
    (so the CPU must wait for the stream before it reads it: see `_ready_for_cpu`)."""
    if getattr(t, "is_cuda", False):
        import torch

        dst = torch.empty(t.shape, dtype=t.dtype, device="cpu", pin_memory=True)
        dst.copy_(t, non_blocking=True)
        return dst
    return t.clone()


def _ready_for_cpu(copies) -> None:
    """Host copies made from CUDA may still be in flight; safetensors reads them on the CPU."""
    k = copies[0][0]
    if getattr(k, "is_pinned", None) is not None and k.is_pinned():
        import torch

        torch.cuda.synchronize()


def _copy_into(dst, src) -> None:
    # Pinned host copies go back asynchronously on the current stream, ahead of the attention that
    # reads the block; a tensor read from a file is pageable memory, so that copy is synchronous.
    if getattr(dst, "is_cuda", False) and getattr(src, "is_pinned", lambda: False)():
        dst.copy_(src, non_blocking=True)
    else:
        dst.copy_(src)


class ThreeTierPrefixCachingBlockPool(PrefixCachingBlockPool):
    """`PrefixCachingBlockPool` plus a host tier of `host_capacity_blocks` blocks and a disk tier of
    `disk_capacity_blocks` block files in `disk_dir`.

    `kv` is bound after the engine is built (`pool.kv = engine.kv`). `host` maps a block hash to
    its per-layer `(K, V)` copies, `disk` maps a block hash to its file's path; both least
    recently used first.
    """

    def __init__(self, num_blocks: int, block_size: int, host_capacity_blocks: int, disk_dir,
                 disk_capacity_blocks: int, write_policy: str = "write_back"):
        super().__init__(num_blocks, block_size)
        if host_capacity_blocks < 0 or disk_capacity_blocks < 0:
            raise ValueError("host_capacity_blocks and disk_capacity_blocks must be >= 0, got "
                             f"{host_capacity_blocks} and {disk_capacity_blocks}")
        if write_policy not in WRITE_POLICIES:
            raise ValueError(f"write_policy must be one of {WRITE_POLICIES}, got {write_policy!r}")
        self.host_capacity = host_capacity_blocks
        self.disk_capacity = disk_capacity_blocks
        self.write_policy = write_policy
        self.disk_dir = os.fspath(disk_dir)
        os.makedirs(self.disk_dir, exist_ok=True)
        self.host: OrderedDict[int, list[tuple]] = OrderedDict()
        self.disk: OrderedDict[int, str] = OrderedDict()
        self.kv = None
        self.num_gpu_hits = self.num_host_hits = self.num_disk_hits = 0  # in tokens
        self.num_host_writes = 0       # blocks copied GPU -> host
        self.num_disk_writes = 0       # block files written
        self.num_loaded_from_host = 0  # blocks copied host -> GPU
        self.num_loaded_from_disk = 0  # blocks copied disk -> GPU

    # -- file format ---------------------------------------------------------------------------

    def save_file(self, tensors: dict, path: str) -> None:
        from safetensors.torch import save_file

        save_file(tensors, path)

    def load_file(self, path: str) -> dict:
        from safetensors.torch import load_file

        return load_file(path)

    def disk_path(self, h: int) -> str:
        return os.path.join(self.disk_dir, f"{h:016x}.safetensors")

    # -- copies down the hierarchy ---------------------------------------------------------------

    def _copy_block(self, block: int) -> list[tuple]:
        kv = self.kv
        return [(_to_host(kv.k[layer][block]), _to_host(kv.v[layer][block])) for layer in range(len(kv.k))]

    def _put_host(self, h: int, copies: list[tuple]) -> None:
        self.host[h] = copies
        self.num_host_writes += 1
        if len(self.host) > self.host_capacity:
            old, old_copies = self.host.popitem(last=False)
            if self.write_policy == "write_back" and old not in self.disk:
                self._put_disk(old, old_copies)

    def _put_disk(self, h: int, copies: list[tuple]) -> None:
        _ready_for_cpu(copies)
        tensors = {}
        for layer, (k, v) in enumerate(copies):
            tensors[f"k.{layer}"] = k
            tensors[f"v.{layer}"] = v
        path = self.disk_path(h)
        self.save_file(tensors, path)
        self.disk[h] = path
        self.num_disk_writes += 1
        if len(self.disk) > self.disk_capacity:
            _, old_path = self.disk.popitem(last=False)
            os.remove(old_path)

    def _read_disk(self, path: str) -> list[tuple]:
        tensors = self.load_file(path)
        return [(tensors[f"k.{layer}"], tensors[f"v.{layer}"]) for layer in range(len(self.kv.k))]

    def allocate(self, n: int) -> list[int] | None:
        if self.write_policy == "write_back" and 0 <= n <= len(self.free_queue):
            for b in list(islice(self.free_queue, n)):  # the blocks about to be reused
                h = self.block_hash[b]
                if h is not None and h not in self.host:
                    self._put_host(h, self._copy_block(b))
        return super().allocate(n)

    def register(self, block: int, h: int) -> None:
        # The parent's cache_blocks registers through here, and so do this pool's reloads: the one
        # place where a block becomes cached, hence the one place write-through copies it.
        super().register(block, h)
        if self.write_policy == "write_through":
            copies = None
            if h not in self.host:
                copies = self._copy_block(block)
                self._put_host(h, copies)
            if h not in self.disk:
                self._put_disk(h, copies if copies is not None else self.host[h])

    # -- lookup and reload ---------------------------------------------------------------------

    def lookup(self, token_ids: Sequence[int]) -> list[int]:
        plan = []  # (hash, tier, GPU block | host copies | file path)
        for h in self.block_hashes(token_ids):
            b = self.hash_to_block.get(h)
            if b is not None:
                plan.append((h, _GPU, b))
            elif h in self.host:
                plan.append((h, _HOST, self.host[h]))
            elif h in self.disk:
                plan.append((h, _DISK, self.disk[h]))
            else:
                break

        protected = [b for _, tier, b in plan if tier == _GPU and self.ref_cnt[b] == 0]
        for b in protected:
            del self.free_queue[b]
        need = sum(1 for _, tier, _ in plan if tier != _GPU)
        if need > len(self.free_queue):  # no room for the reloads: the GPU hits before the first
            plan = plan[:next(i for i, (_, tier, _) in enumerate(plan) if tier != _GPU)]
            need = 0
        # Read the files before allocating: the allocation's offloads may push these very entries
        # out of the disk tier, deleting their files.
        plan = [(h, tier, self._read_disk(src) if tier == _DISK else src) for h, tier, src in plan]
        new_blocks = iter(self.allocate(need) if need else [])

        hit = []
        for h, tier, src in plan:
            if tier == _GPU:
                b = src
                self.num_gpu_hits += self.block_size
            else:
                b = next(new_blocks)
                kv = self.kv
                for layer, (k, v) in enumerate(src):
                    _copy_into(kv.k[layer][b], k)
                    _copy_into(kv.v[layer][b], v)
                store = self.host if tier == _HOST else self.disk
                if h in store:
                    store.move_to_end(h)
                self.register(b, h)
                # Free but cached, like any other hit: the scheduler's `touch` takes it next.
                self.ref_cnt[b] = 0
                self.free_queue[b] = None
                if tier == _HOST:
                    self.num_loaded_from_host += 1
                    self.num_host_hits += self.block_size
                else:
                    self.num_loaded_from_disk += 1
                    self.num_disk_hits += self.block_size
            hit.append(b)
        for b in protected:
            self.free_queue[b] = None
        self.num_queries += len(token_ids)
        self.num_hits += len(hit) * self.block_size
        return hit
