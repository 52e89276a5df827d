"""(g) The pool's invariants after every operation of long, seeded random workloads."""

import random

from kvtools import World, toks, write
from tiered import TieredPrefixCachingBlockPool


def workload(observe, seed, num_blocks, capacity, steps):
    rng = random.Random(seed)
    w = World(TieredPrefixCachingBlockPool, num_blocks=num_blocks, capacity=capacity)
    pool = w.pool
    systems = [toks(10_000, 3), toks(20_000, 2), toks(30_000, 1)]
    questions = [toks(40_000 + 100 * i, rng.randint(0, 2), extra=rng.randint(0, 3)) for i in range(6)]
    prompts = []
    for si, sys_prompt in enumerate(systems):
        for qi, q in enumerate(questions):
            prompts.append(w.name(f"S{si}Q{qi}", sys_prompt + q))
    held = []
    lookups = []
    contents_ok = True
    first_broken = None
    for step in range(steps):
        r = rng.random()
        if r < 0.35:
            table = w.run(rng.choice(prompts))
            if table is not None:
                held.append(table)
            what = "serve"
        elif r < 0.6 and held:
            table = held.pop(rng.randrange(len(held)))
            pool.free(reversed(table) if rng.random() < 0.5 else table)
            what = "finish"
        elif r < 0.85:
            p = rng.choice(prompts)
            found = pool.lookup(p)
            lookups.append(found)
            contents_ok = contents_ok and w.tags(found) == w.expected_tags(p, len(found))
            what = "lookup"
        else:
            raw = pool.allocate(rng.randint(1, 3))
            if raw is not None:
                for blk in raw:
                    write(w.kv, blk, 999)
                held.append(raw)
            what = "allocate"
        broken = w.problems()
        if broken and first_broken is None:
            first_broken = [step, what, broken[0]]
    for table in held:
        pool.free(table)
    broken = w.problems()
    if broken and first_broken is None:
        first_broken = ["end", "free all", broken[0]]
    observe(f"seed {seed}: first broken invariant (step, operation, what)", first_broken)
    observe(f"seed {seed}: every lookup returned blocks holding the KV of their prefixes", contents_ok)
    observe(f"seed {seed}: blocks returned by each lookup", lookups)
    observe(f"seed {seed}: free_queue at the end", list(pool.free_queue))
    observe(f"seed {seed}: host keys at the end", w.host_keys())
    observe(f"seed {seed}: queries, hits, offloaded, loaded", w.counters())


def test_random_operations(observe):
    workload(observe, seed=1, num_blocks=10, capacity=4, steps=250)
    workload(observe, seed=2, num_blocks=16, capacity=12, steps=250)
    workload(observe, seed=3, num_blocks=8, capacity=40, steps=250)
    workload(observe, seed=4, num_blocks=12, capacity=0, steps=120)
