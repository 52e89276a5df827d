# expect: WA
# caught-by: hidden/test_moves.py::test_cpu_hit_with_both_levels_full
# bug: on a CPU hit, the GPU level's LRU entry moves down before the hit leaves the CPU level, so a full CPU level drops an entry it had room for
from collections import OrderedDict


class TieredKVCache:
    def __init__(self, gpu_blocks, cpu_blocks):
        self.gpu_blocks, self.cpu_blocks = gpu_blocks, cpu_blocks
        self.gpu, self.cpu = OrderedDict(), OrderedDict()
        self.num_gpu_hits = self.num_cpu_hits = self.num_misses = self.num_offloaded = 0

    def _into_gpu(self, h):
        self.gpu[h] = None
        if len(self.gpu) > self.gpu_blocks:
            down, _ = self.gpu.popitem(last=False)
            self.num_offloaded += 1
            self.cpu[down] = None
            self.cpu.move_to_end(down)
            if len(self.cpu) > self.cpu_blocks:
                self.cpu.popitem(last=False)

    def access(self, h):
        if h in self.gpu:
            self.gpu.move_to_end(h)
            self.num_gpu_hits += 1
            return "gpu"
        if h in self.cpu:
            self.num_cpu_hits += 1
            self._into_gpu(h)
            if h in self.gpu:
                self.cpu.pop(h, None)
            return "cpu"
        self.num_misses += 1
        self._into_gpu(h)
        return "miss"

    def gpu_keys(self):
        return list(self.gpu)

    def cpu_keys(self):
        return list(self.cpu)
