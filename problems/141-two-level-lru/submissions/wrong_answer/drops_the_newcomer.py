# expect: WA
# caught-by: public/test_rules.py::test_cpu_level_drops_its_lru, hidden/test_traces.py::test_random_traces
# bug: when the CPU level is full, the entry coming down is the one dropped, so the CPU level keeps its oldest entries forever
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
            if len(self.cpu) < self.cpu_blocks:
                self.cpu[down] = None
        return outcome

    def gpu_keys(self):
        return list(self.gpu)

    def cpu_keys(self):
        return list(self.cpu)
