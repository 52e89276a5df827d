"""(c) Host memory is an LRU store of at most host_capacity blocks; a reloaded host hit is a use."""

from kvtools import World, toks
from tiered import TieredPrefixCachingBlockPool


def test_capacity_and_recency(observe):
    w = World(TieredPrefixCachingBlockPool, num_blocks=4, capacity=3)
    pool = w.pool
    p = [w.name(f"P{i}", toks(100 * i, 1)) for i in range(1, 9)]
    for i in range(4):
        w.serve(p[i], head_first=True)
    observe("free_queue after P1..P4", list(pool.free_queue))
    sizes_ok = True
    for i in range(4, 8):
        w.serve(p[i], head_first=True)
        sizes_ok = sizes_ok and len(pool.host) <= 3
        observe(f"host keys after P{i + 1}", w.host_keys())
    observe("host never held more than 3 blocks", sizes_ok)

    found = pool.lookup(p[2])
    observe("lookup(P3) returns", found)
    observe("content numbers in returned blocks", w.tags(found))
    observe("host keys after lookup(P3)", w.host_keys())
    observe("lookup(P2) returns (evicted)", pool.lookup(p[1]))
    found = pool.lookup(p[3])
    observe("lookup(P4) returns", found)
    observe("content numbers in returned blocks for P4", w.tags(found))
    observe("host keys after lookup(P4)", w.host_keys())
    observe("queries, hits, offloaded, loaded", w.counters())
    observe("broken invariants", w.problems())


def test_host_hit_is_a_use(observe):
    w = World(TieredPrefixCachingBlockPool, num_blocks=4, capacity=6)
    pool = w.pool
    x = w.name("X", toks(100, 3))
    y = w.name("Y", toks(200, 4))
    w.serve(x, head_first=True)
    w.serve(y, head_first=True)                                   # X[0..2] go to host
    held_z = w.run(w.name("Z", toks(300, 1)))             # Y[0] goes to host
    pool.touch([0, 1])                                    # running requests hold two blocks
    observe("host keys", w.host_keys())
    observe("free_queue", list(pool.free_queue))

    observe("lookup(X) returns (no room to reload)", pool.lookup(x))
    observe("host keys after lookup(X): a reload that fails moves nothing", w.host_keys())
    observe("lookup(Y) returns (no room to reload)", pool.lookup(y))
    observe("host keys after lookup(Y)", w.host_keys())

    pool.free([1, 0])
    found = pool.lookup(x[:8])
    observe("lookup(X[0..1]) returns", found)
    observe("every returned block holds the KV of its prefix", w.tags(found) == w.expected_tags(x, 2))
    observe("host keys after lookup(X[0..1])", w.host_keys())
    w.serve(w.name("W", toks(400, 2)), head_first=True)           # more offloads: the LRU entry goes
    observe("host keys after W", w.host_keys())
    w.release(held_z, head_first=True)
    observe("queries, hits, offloaded, loaded", w.counters())
    observe("broken invariants", w.problems())


def test_reload_survives_eviction(observe):
    # The lookup's own allocation offloads blocks, which evicts the very copies being reloaded.
    for capacity in (2, 1):
        w = World(TieredPrefixCachingBlockPool, num_blocks=4, capacity=capacity)
        pool = w.pool
        x = w.name("X", toks(100, capacity))
        w.serve(x, head_first=True)
        w.serve(w.name("Y", toks(200, 4)), head_first=True)        # X's blocks go to host
        observe(f"capacity {capacity}: host keys before", w.host_keys())
        found = pool.lookup(x)
        observe(f"capacity {capacity}: lookup(X) returns", found)
        observe(f"capacity {capacity}: content numbers in returned blocks", w.tags(found))
        observe(f"capacity {capacity}: every returned block holds the KV of its prefix",
                w.tags(found) == w.expected_tags(x, len(found)))
        observe(f"capacity {capacity}: host keys after", w.host_keys())
        observe(f"capacity {capacity}: queries, hits, offloaded, loaded", w.counters())
        observe(f"capacity {capacity}: broken invariants", w.problems())
