# Two plain lists, least recently used first. O(n) per access, which is nothing at these sizes.


class TieredKVCache:
    def __init__(self, gpu_blocks, cpu_blocks):
        self.gpu_blocks = gpu_blocks
        self.cpu_blocks = cpu_blocks
        self.gpu = []
        self.cpu = []
        self.num_gpu_hits = self.num_cpu_hits = self.num_misses = self.num_offloaded = 0

    def access(self, h):
        if h in self.gpu:
            self.gpu.remove(h)
            self.gpu.append(h)
            self.num_gpu_hits += 1
            return "gpu"
        if h in self.cpu:
            self.cpu.remove(h)
            outcome = "cpu"
            self.num_cpu_hits += 1
        else:
            outcome = "miss"
            self.num_misses += 1
        self.gpu.append(h)
        while len(self.gpu) > self.gpu_blocks:
            self.cpu.append(self.gpu.pop(0))
            self.num_offloaded += 1
        while len(self.cpu) > self.cpu_blocks:
            self.cpu.pop(0)
        return outcome

    def gpu_keys(self):
        return list(self.gpu)

    def cpu_keys(self):
        return list(self.cpu)
