"""Long seeded traces of accesses, over many pairs of capacities (0 included), checked against
the reference access by access, and against the invariants of two LRU levels."""

import random

from two_level_lru import TieredKVCache

CAPACITIES = [(1, 1), (2, 3), (3, 2), (4, 8), (8, 4), (1, 0), (0, 1), (0, 3), (5, 0), (0, 0),
              (6, 6), (2, 12)]


def broken(cache, gpu_blocks, cpu_blocks, accesses):
    gpu, cpu = cache.gpu_keys(), cache.cpu_keys()
    if len(gpu) > gpu_blocks:
        return "the GPU level holds more than gpu_blocks entries"
    if len(cpu) > cpu_blocks:
        return "the CPU level holds more than cpu_blocks entries"
    if len(set(gpu)) != len(gpu) or len(set(cpu)) != len(cpu):
        return "a level lists the same hash twice"
    if set(gpu) & set(cpu):
        return "a hash is in both levels"
    if cache.num_gpu_hits + cache.num_cpu_hits + cache.num_misses != accesses:
        return "num_gpu_hits + num_cpu_hits + num_misses is not the number of accesses"
    return None


def trace(observe, seed, gpu_blocks, cpu_blocks, steps=300):
    rng = random.Random(seed)
    # A working set a little larger than both levels together, with a few hot hashes, so all
    # three outcomes happen often.
    universe = [rng.getrandbits(63) for _ in range(gpu_blocks + cpu_blocks + rng.randint(2, 6))]
    hot = universe[:max(1, len(universe) // 4)]
    cache = TieredKVCache(gpu_blocks, cpu_blocks)
    names = {h: f"h{i}" for i, h in enumerate(universe)}
    results, first_broken, snapshots = [], None, []
    for step in range(1, steps + 1):
        h = rng.choice(hot) if rng.random() < 0.3 else rng.choice(universe)
        results.append(cache.access(h))
        problem = broken(cache, gpu_blocks, cpu_blocks, step)
        if problem and first_broken is None:
            first_broken = [step, problem]
        if step % 50 == 0:
            snapshots.append([[names.get(k, "?") for k in cache.gpu_keys()],
                              [names.get(k, "?") for k in cache.cpu_keys()]])
    label = f"seed {seed}, gpu_blocks={gpu_blocks}, cpu_blocks={cpu_blocks}"
    observe(f"{label}: first broken invariant (step, what)", first_broken)
    observe(f"{label}: results of the accesses, in order", results)
    observe(f"{label}: levels every 50 accesses", snapshots)
    observe(f"{label}: num_gpu_hits, num_cpu_hits, num_misses, num_offloaded",
            [cache.num_gpu_hits, cache.num_cpu_hits, cache.num_misses, cache.num_offloaded])


def test_random_traces(observe):
    for seed, (g, c) in enumerate(CAPACITIES, start=1):
        trace(observe, seed, g, c)


def test_one_hot_hash(observe):
    """A hash used over and over between long runs of new ones: it must survive while the levels
    have room for it, wherever it is."""
    for g, c in ((2, 3), (1, 1), (0, 2), (3, 0)):
        cache = TieredKVCache(g, c)
        results = []
        fresh = iter(range(1000, 2000))
        for gap in (0, 1, 2, 3, 4, 5, 2, 1, 6):
            results.append(cache.access("hot"))
            for _ in range(gap):
                cache.access(next(fresh))
        observe(f"gpu_blocks={g}, cpu_blocks={c}: results for the hot hash", results)
        observe(f"gpu_blocks={g}, cpu_blocks={c}: num_gpu_hits, num_cpu_hits, num_misses, num_offloaded",
                [cache.num_gpu_hits, cache.num_cpu_hits, cache.num_misses, cache.num_offloaded])
