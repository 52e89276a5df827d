# expect: WA
# caught-by: hidden/test_hash_values.py::test_hash_zero_on_the_gpu
# bug: stores each hash as its own value and tests `if level.get(h):`, so a hash that is falsy (0, "") is never found
from collections import OrderedDict


class TieredKVCache:
    def __init__(self, gpu_blocks, cpu_blocks):
        self.gpu_blocks, self.cpu_blocks = gpu_blocks, cpu_blocks
        self.gpu, self.cpu = OrderedDict(), OrderedDict()
        self.num_gpu_hits = self.num_cpu_hits = self.num_misses = self.num_offloaded = 0

    def access(self, h):
        if self.gpu.get(h):
            self.gpu.move_to_end(h)
            self.num_gpu_hits += 1
            return "gpu"
        if self.cpu.get(h):
            del self.cpu[h]
            outcome = "cpu"
            self.num_cpu_hits += 1
        else:
            outcome = "miss"
            self.num_misses += 1
        self.gpu[h] = h
        self.gpu.move_to_end(h)
        if len(self.gpu) > self.gpu_blocks:
            down, _ = self.gpu.popitem(last=False)
            self.num_offloaded += 1
            self.cpu[down] = down
            self.cpu.move_to_end(down)
            if len(self.cpu) > self.cpu_blocks:
                self.cpu.popitem(last=False)
        return outcome

    def gpu_keys(self):
        return list(self.gpu)

    def cpu_keys(self):
        return list(self.cpu)
