"""Where an entry goes when it moves: up on a CPU hit, down at the GPU level's overflow, out at
the CPU level's overflow; and in what order."""

from two_level_lru import TieredKVCache


def levels(cache):
    return [cache.gpu_keys(), cache.cpu_keys()]


def counters(cache):
    return [cache.num_gpu_hits, cache.num_cpu_hits, cache.num_misses, cache.num_offloaded]


def test_cpu_hit_with_both_levels_full(observe):
    cache = TieredKVCache(gpu_blocks=2, cpu_blocks=2)
    for h in (1, 2, 3, 4):
        cache.access(h)
    observe("both levels full", levels(cache))
    for h in (1, 3, 1, 2, 4):
        observe(f"access({h}) returns", cache.access(h))
        observe(f"levels after access({h})", levels(cache))
    observe("counters: gpu hits, cpu hits, misses, offloaded", counters(cache))

    cache = TieredKVCache(gpu_blocks=1, cpu_blocks=1)
    cache.access("x")
    cache.access("y")
    observe("one block each, after x, y", levels(cache))
    results = [cache.access(h) for h in ("x", "y", "x", "y")]
    observe("one block each: results of x, y, x, y", results)
    observe("one block each: levels at the end", levels(cache))
    observe("one block each: counters", counters(cache))


def test_moved_down_entry_is_most_recent_on_cpu(observe):
    cache = TieredKVCache(gpu_blocks=2, cpu_blocks=3)
    for h in range(1, 6):
        cache.access(h)
    observe("levels after 1..5", levels(cache))
    cache.access(6)
    observe("levels after 6", levels(cache))
    cache.access(7)
    observe("levels after 7: the oldest on the CPU level was dropped", levels(cache))
    observe("access(2) returns", cache.access(2))
    observe("access(3) returns", cache.access(3))
    observe("levels after access(2), access(3)", levels(cache))
    cache.access(8)
    cache.access(9)
    observe("levels after 8, 9", levels(cache))
    observe("counters", counters(cache))


def test_no_gpu_level(observe):
    """gpu_blocks=0: every entry passes through the GPU level straight down to the CPU level."""
    cache = TieredKVCache(gpu_blocks=0, cpu_blocks=3)
    steps = []
    for h in (1, 2, 3, 1, 4, 2, 1, 5, 1):
        steps.append([h, cache.access(h), cache.cpu_keys()])
    observe("access, result, CPU level after it", steps)
    observe("the GPU level stays empty", cache.gpu_keys())
    observe("counters", counters(cache))


def test_no_cpu_level(observe):
    """cpu_blocks=0: a plain LRU of gpu_blocks entries; what moves down is counted, then lost."""
    cache = TieredKVCache(gpu_blocks=3, cpu_blocks=0)
    steps = []
    for h in (1, 2, 3, 1, 4, 2, 1, 5, 3, 4):
        steps.append([h, cache.access(h), cache.gpu_keys()])
    observe("access, result, GPU level after it", steps)
    observe("the CPU level stays empty", cache.cpu_keys())
    observe("counters", counters(cache))
