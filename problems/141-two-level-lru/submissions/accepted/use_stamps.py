# One table for both levels: hash -> [level, time of last use]. The order of a level is the order
# of its stamps, so the least recently used entry is the one with the smallest stamp.
import itertools


class TieredKVCache:
    def __init__(self, gpu_blocks: int, cpu_blocks: int):
        self.capacity = {"gpu": gpu_blocks, "cpu": cpu_blocks}
        self.entries: dict = {}
        self.clock = itertools.count()
        self.num_gpu_hits = 0
        self.num_cpu_hits = 0
        self.num_misses = 0
        self.num_offloaded = 0

    def _level(self, name):
        return sorted((h for h, e in self.entries.items() if e[0] == name),
                      key=lambda h: self.entries[h][1])

    def _oldest(self, name):
        return self._level(name)[0]

    def _count(self, name):
        return sum(1 for e in self.entries.values() if e[0] == name)

    def access(self, h):
        entry = self.entries.get(h)
        outcome = "miss" if entry is None else entry[0]
        if outcome == "gpu":
            self.num_gpu_hits += 1
        elif outcome == "cpu":
            self.num_cpu_hits += 1
        else:
            self.num_misses += 1
        self.entries[h] = ["gpu", next(self.clock)]
        if outcome != "gpu" and self._count("gpu") > self.capacity["gpu"]:
            down = self._oldest("gpu")
            # Moving down is a use of the CPU level: it lands there as the newest entry.
            self.entries[down] = ["cpu", next(self.clock)]
            self.num_offloaded += 1
            if self._count("cpu") > self.capacity["cpu"]:
                del self.entries[self._oldest("cpu")]
        return outcome

    def gpu_keys(self):
        return self._level("gpu")

    def cpu_keys(self):
        return self._level("cpu")
