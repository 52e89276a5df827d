"""(h) The pool's invariants, the disk folder included, after every operation of long seeded random
workloads, under both write policies."""

import random

from kvtools import World, toks, write


def workload(observe, tmp_path, seed, num_blocks, host, disk, policy, steps):
    rng = random.Random(seed)
    w = World(tmp_path, num_blocks=num_blocks, host=host, disk=disk, policy=policy, folder=f"disk-{seed}")
    pool = w.pool
    systems = [toks(10_000, 3), toks(20_000, 2), toks(30_000, 1)]
    questions = [toks(40_000 + 100 * i, rng.randint(0, 2), extra=rng.randint(0, 3)) for i in range(6)]
    prompts = [w.name(f"S{si}Q{qi}", s + q) for si, s in enumerate(systems) for qi, q in enumerate(questions)]
    held, lookups = [], []
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
        if first_broken is None:
            # Reading every file each step would be slow: their contents are checked every 20th.
            broken = w.problems(files=step % 20 == 0)
            if broken:
                first_broken = [step, what, broken[0]]
    for table in held:
        pool.free(table)
    broken = w.problems()
    if broken and first_broken is None:
        first_broken = ["end", "free all", broken[0]]
    tag = f"seed {seed} ({policy})"
    observe(f"{tag}: first broken invariant (step, operation, what)", first_broken)
    observe(f"{tag}: every lookup returned blocks holding the KV of their prefixes", contents_ok)
    observe(f"{tag}: blocks returned by each lookup", lookups)
    observe(f"{tag}: free_queue at the end", list(pool.free_queue))
    observe(f"{tag}: host keys, disk keys, files at the end", w.tiers())
    observe(f"{tag}: counters", w.counters())


def test_random_operations_write_back(observe, tmp_path):
    workload(observe, tmp_path, seed=1, num_blocks=10, host=2, disk=6, policy="write_back", steps=200)
    workload(observe, tmp_path, seed=2, num_blocks=14, host=6, disk=20, policy="write_back", steps=200)
    workload(observe, tmp_path, seed=3, num_blocks=8, host=0, disk=3, policy="write_back", steps=150)


def test_random_operations_write_through(observe, tmp_path):
    workload(observe, tmp_path, seed=4, num_blocks=10, host=2, disk=6, policy="write_through", steps=200)
    workload(observe, tmp_path, seed=5, num_blocks=14, host=6, disk=20, policy="write_through", steps=200)
    workload(observe, tmp_path, seed=6, num_blocks=8, host=0, disk=1, policy="write_through", steps=150)
