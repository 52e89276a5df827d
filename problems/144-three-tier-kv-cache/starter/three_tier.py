"""Problem 144: a three-level KV cache, GPU blocks + a bounded LRU store in host memory + a bounded
LRU store of block files on disk.

Write `ThreeTierPrefixCachingBlockPool`. The statement gives the exact rules; in short:

- write_back: `allocate` copies a reused cached block to `self.host` (as in problem 143); an entry
  host drops goes to disk (one safetensors file per block) unless disk has it; an entry disk drops
  has its file deleted.
- write_through: a block is copied to host and written to disk as soon as it gets its hash;
  evictions then copy nothing.
- `lookup(token_ids)`: GPU hit, else host hit, else disk hit, else stop; host and disk hits are
  copied back into fresh GPU blocks. Counters are in tokens (hits) and in blocks (copies).
"""

from __future__ import annotations

import os
from collections import OrderedDict
from typing import Sequence

from prefix_cache import PrefixCachingBlockPool


class ThreeTierPrefixCachingBlockPool(PrefixCachingBlockPool):
    """A prefix-caching block pool with a second tier in host memory and a third on disk."""

    def __init__(self, num_blocks: int, block_size: int, host_capacity_blocks: int, disk_dir,
                 disk_capacity_blocks: int, write_policy: str = "write_back"):
        super().__init__(num_blocks, block_size)
        self.host_capacity = host_capacity_blocks
        self.disk_capacity = disk_capacity_blocks
        self.write_policy = write_policy          # "write_back" or "write_through"
        self.disk_dir = os.fspath(disk_dir)
        os.makedirs(self.disk_dir, exist_ok=True)
        # block hash -> [(K copy, V copy) for each layer], least recently used first.
        self.host: OrderedDict[int, list[tuple]] = OrderedDict()
        # block hash -> path of its file in disk_dir, least recently used first.
        self.disk: OrderedDict[int, str] = OrderedDict()
        # The engine's KV cache, bound after the engine is built: `pool.kv = engine.kv`.
        self.kv = None
        self.num_gpu_hits = self.num_host_hits = self.num_disk_hits = 0  # tokens
        self.num_host_writes = 0       # blocks copied GPU -> host
        self.num_disk_writes = 0       # block files written
        self.num_loaded_from_host = 0  # blocks copied host -> GPU
        self.num_loaded_from_disk = 0  # blocks copied disk -> GPU

    # Every disk write and read goes through these two (safetensors' own signatures). The public
    # tests replace them on the pool with a pure-Python stand-in; keep the imports inside.
    def save_file(self, tensors: dict, path: str) -> None:
        from safetensors.torch import save_file

        save_file(tensors, path)

    def load_file(self, path: str) -> dict:
        from safetensors.torch import load_file

        return load_file(path)

    def disk_path(self, h: int) -> str:
        """The file of block hash `h`: 16 hex digits, `.safetensors`."""
        return os.path.join(self.disk_dir, f"{h:016x}.safetensors")

    def allocate(self, n: int) -> list[int] | None:
        # TODO (write_back): before the parent reuses the first n blocks of free_queue, copy each
        #       cached one whose hash host lacks into host; host over capacity drops its LRU entry,
        #       which goes to disk unless disk has it; disk over capacity deletes its LRU file.
        return super().allocate(n)

    def register(self, block: int, h: int) -> None:
        # cache_blocks calls this for every block it registers.
        super().register(block, h)
        # TODO (write_through): copy the block to host and to disk now, each unless it holds h.

    def lookup(self, token_ids: Sequence[int]) -> list[int]:
        # TODO: walk self.block_hashes(token_ids): GPU hit, host hit, disk hit or stop.
        # TODO: set the free GPU hits aside, get one fresh block per host or disk hit (or keep
        #       only the hits before the first of them), read the disk hits' files before the
        #       allocation can delete them, copy back, register, requeue, count.
        return super().lookup(token_ids)
