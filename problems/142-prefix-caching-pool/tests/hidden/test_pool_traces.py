"""Long seeded random workloads: prompts sharing system prompts, requests that run for a while,
raw allocations, lookups; the invariants after every operation, and every lookup's blocks must
hold the prefix asked for."""

import random

from pooltools import World, toks


def workload(observe, seed, num_blocks, bs, steps):
    rng = random.Random(seed)
    w = World(num_blocks, bs)
    pool = w.pool
    systems = [toks(10_000, 3, bs), toks(20_000, 2, bs), toks(30_000, 1, bs, extra=1)]
    questions = [toks(40_000 + 100 * i, rng.randint(0, 2), bs, extra=rng.randint(0, bs - 1))
                 for i in range(5)]
    prompts = [w.learn(s + q + [1]) for s in systems for q in questions]
    running, lookups, first_broken, all_right = [], [], None, True
    for step in range(steps):
        r = rng.random()
        if r < 0.35:
            table = w.run(rng.choice(prompts), lookup_all=rng.random() < 0.5)
            if table is not None:
                running.append(table)
            what = "serve"
        elif r < 0.6 and running:
            table = running.pop(rng.randrange(len(running)))
            pool.free(table)
            what = "finish"
        elif r < 0.85:
            p = rng.choice(prompts)
            p = p[:rng.randint(0, len(p))]
            found = pool.lookup(p)
            lookups.append(found)
            all_right = all_right and w.right(found, p)
            what = "lookup"
        elif r < 0.93:
            raw = pool.allocate(rng.randint(0, 3))
            if raw:
                for b in raw:
                    w.held[b] = ("raw", step)
                running.append(raw)
            what = "allocate"
        else:
            p = rng.choice(prompts)
            table = w.run(p)
            if table is not None:
                pool.touch(table[:1])           # a second user of its first block
                running.append(table[:1])
                running.append(table)
            what = "share"
        broken = w.problems()
        if broken and first_broken is None:
            first_broken = [step, what, broken[0]]
    for table in running:
        pool.free(table)
    broken = w.problems()
    if broken and first_broken is None:
        first_broken = ["end", "free all", broken[0]]
    label = f"seed {seed} ({num_blocks} blocks of {bs})"
    observe(f"{label}: first broken invariant (step, operation, what)", first_broken)
    observe(f"{label}: every lookup returned blocks holding the prefix asked for", all_right)
    observe(f"{label}: blocks returned by each lookup", lookups)
    observe(f"{label}: free_queue at the end", list(pool.free_queue))
    observe(f"{label}: tokens computed", w.computed)
    observe(f"{label}: num_queries, num_hits", [pool.num_queries, pool.num_hits])


def test_random_workloads(observe):
    workload(observe, seed=1, num_blocks=12, bs=4, steps=300)
    workload(observe, seed=2, num_blocks=20, bs=2, steps=300)
    workload(observe, seed=3, num_blocks=8, bs=4, steps=300)
    workload(observe, seed=4, num_blocks=40, bs=3, steps=300)
    workload(observe, seed=5, num_blocks=6, bs=1, steps=200)


def test_eviction_order(observe):
    """Which cached blocks a burst of new prompts evicts first: tails before heads, older
    requests before newer ones."""
    w = World(10, 4)
    pool = w.pool
    a = w.learn(toks(100, 4, 4), "A")
    b = w.learn(toks(200, 3, 4), "B")
    w.serve(a)
    w.serve(b)
    observe("free_queue after A and B", list(pool.free_queue))
    observe("what each block holds", w.identities())
    survivors = []
    for i in range(5):
        w.serve(w.learn(toks(1000 + 10 * i, 1, 4), f"N{i}"))
        survivors.append([len(pool.lookup(a)), len(pool.lookup(b))])
    observe("blocks of A and of B still found after each new one-block prompt", survivors)
    observe("what each block holds at the end", w.identities())
    observe("num_queries, num_hits", [pool.num_queries, pool.num_hits])
