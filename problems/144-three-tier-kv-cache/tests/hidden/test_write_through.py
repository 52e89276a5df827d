"""(f) Write-through: a block is copied to host and written to disk as soon as it gets its hash
(in cache_blocks and when a lookup reloads it), each unless that tier has the hash; evictions then
copy nothing. And the statement's question: what does that cost?"""

import random

from kvtools import World, toks


def test_copies_when_cached(observe, tmp_path):
    w = World(tmp_path, num_blocks=4, host=2, disk=6, policy="write_through")
    pool = w.pool
    a = w.name("A", toks(100, 2, extra=3))
    steps = []

    def step(what):
        steps.append([what] + w.tiers() + [w.copies()])

    held = w.run(a); step("A computed (still running)")
    dup = pool.allocate(1)                                   # the same prefix computed again
    pool.cache_blocks(a, dup + held[1:], 4)                  # stays anonymous: nothing copied
    step("a duplicate of A[0]")
    w.release(dup)
    w.release(held); step("A finished")
    w.serve(w.name("B", toks(200, 4))); step("serve B")       # evictions copy nothing
    found = pool.lookup(a); step("lookup(A)")                 # reloads from disk, writes through
    observe("lookup(A) returns", found)
    observe("content numbers in returned blocks", w.tags(found))
    w.serve(w.name("C", toks(300, 3)), head_first=True); step("serve C")
    found = pool.lookup(a); step("lookup(A) again")
    observe("lookup(A) again returns", found)
    observe("after each step: what, host keys, disk keys, files, copies", steps)
    observe("content numbers in the files", w.file_tags())
    observe("hit tokens by tier, all, queries", w.hits())
    observe("broken invariants", w.problems())


def test_small_tiers(observe, tmp_path):
    """Host smaller than what one lookup reloads: the write-through of an early reload pushes a
    later host hit of the same lookup out of host, and that hit's own reload copies it back."""
    for host in (0, 1, 2):
        w = World(tmp_path, num_blocks=4, host=host, disk=3, policy="write_through", folder=f"host{host}")
        pool = w.pool
        x = w.name("X", toks(100, 3))
        w.serve(x, head_first=True)
        raw = pool.allocate(4)                              # every block reused, nothing registered
        pool.free(raw)
        label = f"host {host}"
        observe(f"{label}: host keys, disk keys, files before", w.tiers())
        found = pool.lookup(x)
        observe(f"{label}: lookup(X) returns", found)
        observe(f"{label}: every returned block holds the KV of its prefix",
                w.tags(found) == w.expected_tags(x, len(found)))
        observe(f"{label}: host keys, disk keys, files after", w.tiers())
        observe(f"{label}: counters", w.counters())
        observe(f"{label}: broken invariants", w.problems())


def chat_workload(w, seed):
    """Conversations that share a system prompt and grow turn by turn; some end early."""
    rng = random.Random(seed)
    system = toks(10_000, 2)
    chats = [w.name(f"C{c}", system + toks(20_000 + 1000 * c, 0, extra=rng.randint(2, 6))) for c in range(6)]
    for turn in range(4):
        order = list(range(6))
        rng.shuffle(order)
        for c in order:
            if w.serve(chats[c], head_first=rng.random() < 0.3) is not None:
                reply = toks(50_000 + 1000 * c + 100 * turn, 0, extra=rng.randint(3, 9))
                chats[c] = w.name(f"C{c}", chats[c] + reply)


def test_what_write_through_costs(observe, tmp_path):
    for seed, (blocks, host, disk) in ((1, (12, 4, 40)), (2, (10, 8, 16))):
        figures = {}
        for policy in ("write_back", "write_through"):
            w = World(tmp_path, num_blocks=blocks, host=host, disk=disk, policy=policy,
                      folder=f"{policy}-{seed}")
            chat_workload(w, seed)
            p = w.pool
            figures[policy] = {"copies made": p.num_host_writes + p.num_disk_writes,
                               "copies read back": p.num_loaded_from_host + p.num_loaded_from_disk,
                               "counters": w.counters()}
            observe(f"seed {seed}, {policy}: figures", figures[policy])
            observe(f"seed {seed}, {policy}: broken invariants", w.problems())
        observe(f"seed {seed}: write-through makes more copies",
                figures["write_through"]["copies made"] > figures["write_back"]["copies made"])


def test_reload_rewrites_a_dropped_disk_copy(observe, tmp_path):
    """A disk tier of one block: A's first block was dropped from disk by A's second; after the
    GPU reuses everything, looking A up reloads from host and writes each block through again."""
    w = World(tmp_path, num_blocks=4, host=4, disk=1, policy="write_through")
    pool = w.pool
    a = w.name("A", toks(100, 2))
    w.serve(a)
    raw = pool.allocate(4)
    pool.free(raw)
    found = pool.lookup(a)
    observe("lookup(A) returns", found)
    observe("every returned block holds the KV of its prefix", w.tags(found) == w.expected_tags(a, len(found)))
    observe("host keys, disk keys, files", w.tiers())
    observe("counters", w.counters())
