# expect: WA
# caught-by: public/test_examples.py::test_example_statement, public/test_rules.py::test_gpu_hit_refreshes
# bug: when the GPU level overflows, its least recently used entry is dropped instead of moving down (a one-level LRU)
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
            self.gpu.popitem(last=False)
            self.num_offloaded += 1
        return outcome

    def gpu_keys(self):
        return list(self.gpu)

    def cpu_keys(self):
        return list(self.cpu)
