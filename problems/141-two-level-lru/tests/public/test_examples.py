"""The statement's worked example, one access at a time."""

from trace_cache import trace_cache
from two_level_lru import TieredKVCache


def test_example_statement(observe):
    cache = trace_cache(TieredKVCache(gpu_blocks=2, cpu_blocks=2))
    for i, h in enumerate("ABCADAEB", start=1):
        result = cache.access(h)
        observe(f"step {i}: access({h!r}) returns", result)
        observe(f"step {i}: gpu_keys(), cpu_keys() after access({h!r})",
                [cache.gpu_keys(), cache.cpu_keys()])
    observe("num_gpu_hits, num_cpu_hits, num_misses, num_offloaded at the end",
            [cache.num_gpu_hits, cache.num_cpu_hits, cache.num_misses, cache.num_offloaded])


def test_example_new_cache(observe):
    cache = trace_cache(TieredKVCache(gpu_blocks=3, cpu_blocks=5))
    observe("a new cache: gpu_keys(), cpu_keys()", [cache.gpu_keys(), cache.cpu_keys()])
    observe("a new cache: num_gpu_hits, num_cpu_hits, num_misses, num_offloaded",
            [cache.num_gpu_hits, cache.num_cpu_hits, cache.num_misses, cache.num_offloaded])
    observe("first access(42) returns", cache.access(42))
    observe("second access(42) returns", cache.access(42))
    observe("gpu_keys(), cpu_keys() after the two accesses", [cache.gpu_keys(), cache.cpu_keys()])
