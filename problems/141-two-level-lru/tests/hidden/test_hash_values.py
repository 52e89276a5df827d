"""Any hashable value is a block hash: 0, negative and 63-bit ints, strings (the empty one too),
tuples. Nothing may treat a falsy hash as absent."""

from two_level_lru import TieredKVCache


def test_any_hashable(observe):
    keys = [0, -1, 2**63 - 1, "", "0", (1, 2), (), 7]
    # Room for all of them: every second access must be a hit, on one level or the other.
    cache = TieredKVCache(gpu_blocks=3, cpu_blocks=8)
    first = [cache.access(k) for k in keys]
    observe("first access of each hash", first)
    observe("levels after every hash once", [cache.gpu_keys(), cache.cpu_keys()])
    again = [cache.access(k) for k in keys]
    observe("second access of each hash", again)
    observe("levels at the end", [cache.gpu_keys(), cache.cpu_keys()])
    observe("num_gpu_hits, num_cpu_hits, num_misses, num_offloaded",
            [cache.num_gpu_hits, cache.num_cpu_hits, cache.num_misses, cache.num_offloaded])


def test_hash_zero_on_the_gpu(observe):
    cache = TieredKVCache(gpu_blocks=2, cpu_blocks=2)
    observe("access(0) returns", cache.access(0))
    observe("access(0) again returns", cache.access(0))
    cache.access(5)
    cache.access(6)
    observe("access(0) after 5, 6 returns", cache.access(0))
    observe("levels at the end", [cache.gpu_keys(), cache.cpu_keys()])


def test_keys_are_new_lists(observe):
    cache = TieredKVCache(gpu_blocks=1, cpu_blocks=2)
    for h in (1, 2, 3):
        cache.access(h)
    gpu, cpu = cache.gpu_keys(), cache.cpu_keys()
    gpu.append("intruder")
    cpu.clear()
    observe("levels after changing the returned lists", [cache.gpu_keys(), cache.cpu_keys()])
    observe("access(1) after that returns", cache.access(1))
