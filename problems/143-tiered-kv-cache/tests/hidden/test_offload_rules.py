"""(d) What is offloaded: only blocks with a hash, only when allocate reuses them, a hash once
while it stays in host memory, never with capacity 0; and as copies, not views."""

from kvtools import World, host_tag, toks, write
from prefix_cache import PrefixCachingBlockPool
from tiered import TieredPrefixCachingBlockPool


def test_only_hashed_blocks_offloaded(observe):
    w = World(TieredPrefixCachingBlockPool, num_blocks=6, capacity=10)
    pool = w.pool
    p = w.name("P", toks(100, 2, extra=1))                # 2 full blocks + 1 token
    r = w.name("R", toks(300, 1))
    w.serve(p, head_first=True)                                   # blocks 0, 1, 2 (2 is partial)
    held_r = w.run(r)                                     # R[0] registered in block 3
    dup = pool.allocate(1)                                # the same prefix computed again:
    write(w.kv, dup[0], w.contents.of(r))                 # it stays anonymous
    pool.cache_blocks(r, dup, len(r))
    observe("the duplicate block's hash", pool.block_hash[dup[0]])
    w.release(dup, head_first=True)
    observe("num_offloaded before reuse", pool.num_offloaded)

    w.serve(w.name("Q", toks(500, 5)), head_first=True)           # reuses 5, 0, 1, 2 and the duplicate
    observe("host keys after Q", w.host_keys())
    observe("num_offloaded after Q", pool.num_offloaded)
    observe("host copies hold the KV of their prefixes", w.problems() == [])
    observe("no host key is None", None not in pool.host)

    w.release(held_r, head_first=True)
    held = pool.allocate(2)                               # raw blocks, never registered
    w.release(held, head_first=True)
    w.serve(w.name("S", toks(700, 6)), head_first=True)
    observe("host keys after S", w.host_keys())
    observe("num_offloaded after S", pool.num_offloaded)
    observe("broken invariants", w.problems())


def test_offload_once_while_resident(observe):
    for capacity in (4, 3):
        w = World(TieredPrefixCachingBlockPool, num_blocks=3, capacity=capacity)
        pool = w.pool
        a = w.name("A", toks(100, 1))
        steps = []

        def step(what):
            steps.append([what, pool.num_offloaded, pool.num_loaded, w.host_keys()])

        w.serve(a, head_first=True); step("serve A")
        w.serve(w.name("B", toks(200, 3))); step("serve B")  # A[0] to host
        found = pool.lookup(a); step("lookup(A)")           # A[0] on the GPU again, and in host
        observe(f"capacity {capacity}: lookup(A) returns", found)
        observe(f"capacity {capacity}: content numbers in returned blocks", w.tags(found))
        w.serve(a, head_first=True); step("serve A again")
        # C reuses all three blocks, A[0]'s last: with capacity 4 A[0] is still in host then.
        w.serve(w.name("C", toks(300, 3)), head_first=True); step("serve C")
        found = pool.lookup(a); step("lookup(A) once more")
        observe(f"capacity {capacity}: lookup(A) once more returns", found)
        w.serve(w.name("D", toks(400, 3)), head_first=True); step("serve D")
        observe(f"capacity {capacity}: after each step: what, num_offloaded, num_loaded, host keys", steps)
        observe(f"capacity {capacity}: broken invariants", w.problems())


def test_capacity_zero(observe):
    """With no host tier every offload is made, counted and dropped at once; what a lookup finds is
    what a plain prefix-caching pool finds."""
    tiered = World(TieredPrefixCachingBlockPool, num_blocks=5, capacity=0)
    plain = World(lambda n, bs, cap: PrefixCachingBlockPool(n, bs), num_blocks=5, capacity=0)
    prompts = [toks(100, 3), toks(200, 2, extra=2), toks(100, 2) + toks(900, 1), toks(300, 4), toks(100, 3),
               toks(200, 2), toks(100, 1)]
    same = []
    offloaded = []
    for i, pr in enumerate(prompts):
        got = tiered.run(pr)
        want = plain.run(pr)
        # Block ids may differ (a tiered lookup moves its free GPU hits to the end of free_queue);
        # what each table holds may not.
        same.append(None not in (got, want) and tiered.tags(got) == plain.tags(want) or got is want is None)
        tiered.release(got)
        plain.release(want)
        if i % 2:
            same.append(tiered.tags(tiered.pool.lookup(prompts[0])) == plain.tags(plain.pool.lookup(prompts[0])))
        offloaded.append(tiered.pool.num_offloaded)
    observe("what block tables and lookups hold equals a plain prefix-caching pool's, step by step", same)
    observe("num_offloaded after each prompt", offloaded)
    observe("host size", len(tiered.pool.host))
    observe("queries, hits, offloaded, loaded", tiered.counters())
    observe("broken invariants", tiered.problems())


def test_copies_not_views(observe):
    w = World(TieredPrefixCachingBlockPool, num_blocks=2, capacity=4)
    pool = w.pool
    a = w.name("A", toks(100, 2))
    b = w.name("B", toks(200, 2))
    c = w.name("C", toks(300, 2))
    w.serve(a, head_first=True)
    w.serve(b, head_first=True)                                   # A's blocks are overwritten with B's KV
    observe("host copies after B hold", [host_tag(e) for e in pool.host.values()])
    found = pool.lookup(a)                                # B's blocks overwritten with A's KV
    observe("lookup(A) returns", found)
    observe("content numbers in returned blocks", w.tags(found))
    observe("host keys", w.host_keys())
    observe("host copies after lookup(A) hold", [host_tag(e) for e in pool.host.values()])
    w.serve(c, head_first=True)                                   # and again, with C's KV
    found = pool.lookup(b)
    observe("lookup(B) returns", found)
    observe("content numbers in returned blocks for B", w.tags(found))
    observe("host copies at the end hold", [host_tag(e) for e in pool.host.values()])
    observe("broken invariants", w.problems())
