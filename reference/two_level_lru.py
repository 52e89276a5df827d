"""The reference answer to problem 141: a two-level LRU of block hashes.

Only the bookkeeping of a tiered KV cache, with no KV in it: which block hashes sit in the small
fast level ("gpu"), which in the larger slow one ("cpu"), and in what order each level lets them
go. Problem 143 adds the real blocks, the copies and the prefix walk on top of the same rules.

Pure Python on purpose: problem 141 runs in the browser (Pyodide) and everywhere else.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Hashable

__all__ = ["TieredKVCache"]


class TieredKVCache:
    """Two LRU levels of block hashes; a hash is in at most one level at a time."""

    def __init__(self, gpu_blocks: int, cpu_blocks: int):
        if gpu_blocks < 0 or cpu_blocks < 0:
            raise ValueError(f"capacities must be >= 0, got {gpu_blocks} and {cpu_blocks}")
        self.gpu_blocks = gpu_blocks
        self.cpu_blocks = cpu_blocks
        # Values unused; the order is the recency order, least recently used first.
        self._gpu: OrderedDict[Hashable, None] = OrderedDict()
        self._cpu: OrderedDict[Hashable, None] = OrderedDict()
        self.num_gpu_hits = 0
        self.num_cpu_hits = 0
        self.num_misses = 0
        self.num_offloaded = 0

    def access(self, h: Hashable) -> str:
        if h in self._gpu:
            self._gpu.move_to_end(h)
            self.num_gpu_hits += 1
            return "gpu"
        if h in self._cpu:
            # Out of the CPU level before anything moves down: the entry that comes down in
            # exchange takes the place this one leaves, so a CPU hit never drops anything.
            del self._cpu[h]
            where = "cpu"
            self.num_cpu_hits += 1
        else:
            where = "miss"
            self.num_misses += 1
        self._gpu[h] = None
        if len(self._gpu) > self.gpu_blocks:
            down, _ = self._gpu.popitem(last=False)
            self.num_offloaded += 1
            self._cpu[down] = None
            if len(self._cpu) > self.cpu_blocks:
                self._cpu.popitem(last=False)
        return where

    def gpu_keys(self) -> list:
        return list(self._gpu)

    def cpu_keys(self) -> list:
        return list(self._cpu)
