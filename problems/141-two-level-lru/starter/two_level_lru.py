"""Problem 141: a two-level LRU of block hashes (the bookkeeping of a GPU + CPU KV cache).

Write `TieredKVCache`. The statement gives the exact rules; in short, `access(h)`:

- on the GPU level: it becomes the GPU level's most recently used entry -> "gpu";
- on the CPU level: it leaves the CPU level and becomes the GPU level's most recently used
  entry -> "cpu";
- nowhere: it becomes the GPU level's most recently used entry -> "miss";
- then, if the GPU level holds more than `gpu_blocks` entries, its least recently used entry
  moves down to the CPU level (most recently used end there); if the CPU level now holds more
  than `cpu_blocks`, its least recently used entry is dropped.
"""

from __future__ import annotations

from collections import OrderedDict


class TieredKVCache:
    def __init__(self, gpu_blocks: int, cpu_blocks: int):
        self.gpu_blocks = gpu_blocks
        self.cpu_blocks = cpu_blocks
        # Keys are the block hashes, least recently used first; the values are not used.
        self.gpu: OrderedDict = OrderedDict()
        self.cpu: OrderedDict = OrderedDict()
        self.num_gpu_hits = 0
        self.num_cpu_hits = 0
        self.num_misses = 0
        self.num_offloaded = 0  # entries moved down from the GPU level to the CPU level

    def access(self, h) -> str:
        # TODO: a GPU hit, a CPU hit (move it up) or a miss; count it.
        # TODO: when the GPU level overflows, move its least recently used entry down (and count
        #       it); when the CPU level then overflows, drop its least recently used entry.
        self.num_misses += 1
        return "miss"

    def gpu_keys(self) -> list:
        """The hashes on the GPU level, least recently used first."""
        return list(self.gpu)

    def cpu_keys(self) -> list:
        """The hashes on the CPU level, least recently used first."""
        return list(self.cpu)
