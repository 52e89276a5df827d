"""The rules one at a time: recency on the GPU level, moving down, moving back up, dropping, the
counters, and levels of capacity 0."""

from trace_cache import trace_cache
from two_level_lru import TieredKVCache


def levels(cache):
    return [cache.gpu_keys(), cache.cpu_keys()]


def counters(cache):
    return [cache.num_gpu_hits, cache.num_cpu_hits, cache.num_misses, cache.num_offloaded]


def test_gpu_hit_refreshes(observe):
    cache = trace_cache(TieredKVCache(gpu_blocks=3, cpu_blocks=3))
    for h in (1, 2, 3):
        cache.access(h)
    observe("levels after 1, 2, 3", levels(cache))
    observe("access(1) returns", cache.access(1))
    observe("levels after access(1): 1 is the most recently used", levels(cache))
    cache.access(4)
    observe("levels after access(4): the least recently used (2) moved down", levels(cache))
    observe("num_gpu_hits, num_cpu_hits, num_misses, num_offloaded", counters(cache))


def test_cpu_hit_moves_up(observe):
    cache = trace_cache(TieredKVCache(gpu_blocks=2, cpu_blocks=3))
    for h in (10, 20, 30, 40, 50):
        cache.access(h)
    observe("levels after 10, 20, 30, 40, 50", levels(cache))
    observe("access(20) returns", cache.access(20))
    observe("levels after access(20): 20 is back on the GPU, 40 came down", levels(cache))
    observe("access(20) again returns", cache.access(20))
    observe("access(40) returns", cache.access(40))
    observe("levels after access(40)", levels(cache))
    observe("num_gpu_hits, num_cpu_hits, num_misses, num_offloaded", counters(cache))


def test_cpu_level_drops_its_lru(observe):
    cache = trace_cache(TieredKVCache(gpu_blocks=1, cpu_blocks=2))
    for h in ("a", "b", "c"):
        cache.access(h)
    observe("levels after a, b, c", levels(cache))
    cache.access("d")
    observe("levels after d: a, the least recently used on the CPU level, is gone", levels(cache))
    observe("access('a') returns", cache.access("a"))
    observe("levels after access('a')", levels(cache))
    observe("num_gpu_hits, num_cpu_hits, num_misses, num_offloaded", counters(cache))


def test_capacity_zero(observe):
    cache = trace_cache(TieredKVCache(gpu_blocks=2, cpu_blocks=0))
    results = [cache.access(h) for h in (1, 2, 3, 1, 3)]
    observe("no CPU level: results of access(1, 2, 3, 1, 3)", results)
    observe("no CPU level: levels at the end", levels(cache))
    observe("no CPU level: num_gpu_hits, num_cpu_hits, num_misses, num_offloaded", counters(cache))

    cache = trace_cache(TieredKVCache(gpu_blocks=0, cpu_blocks=2))
    results = [cache.access(h) for h in (1, 2, 1, 3, 2)]
    observe("no GPU level: results of access(1, 2, 1, 3, 2)", results)
    observe("no GPU level: levels at the end", levels(cache))
    observe("no GPU level: num_gpu_hits, num_cpu_hits, num_misses, num_offloaded", counters(cache))

    cache = trace_cache(TieredKVCache(gpu_blocks=0, cpu_blocks=0))
    results = [cache.access(h) for h in (1, 1, 2)]
    observe("no level at all: results of access(1, 1, 2)", results)
    observe("no level at all: levels at the end", levels(cache))
    observe("no level at all: num_gpu_hits, num_cpu_hits, num_misses, num_offloaded", counters(cache))
