# expect: WA
# caught-by: hidden/test_moves.py::test_moved_down_entry_is_most_recent_on_cpu
# bug: an entry moving down is put at the least recently used end of the CPU level, so it is the next to be dropped
from collections import OrderedDict


class TieredKVCache:
    def __init__(self, gpu_blocks, cpu_blocks):
        self.gpu_blocks, self.cpu_blocks = gpu_blocks, cpu_blocks
        self.gpu, self.cpu = OrderedDict(), OrderedDict()
        self.num_gpu_hits = self.num_cpu_hits = self.num_misses = self.num_offloaded = 0

    def access(self, h):
        if h in self.gpu:
            self.gpu.move_to_end(h)
            self.num_gpu_hits += 1
            return "gpu"
        if h in self.cpu:
            del self.cpu[h]
            outcome = "cpu"
            self.num_cpu_hits += 1
        else:
            outcome = "miss"
            self.num_misses += 1
        self.gpu[h] = None
        if len(self.gpu) > self.gpu_blocks:
            down, _ = self.gpu.popitem(last=False)
            self.num_offloaded += 1
            if len(self.cpu) >= self.cpu_blocks and self.cpu:
                self.cpu.popitem(last=False)
            if self.cpu_blocks > 0:
                self.cpu[down] = None
                self.cpu.move_to_end(down, last=False)
        return outcome

    def gpu_keys(self):
        return list(self.gpu)

    def cpu_keys(self):
        return list(self.cpu)
