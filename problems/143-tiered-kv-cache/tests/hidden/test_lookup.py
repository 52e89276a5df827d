"""The lookup walk stops at the first block found in neither tier, even when later blocks of
the prompt are still cached somewhere."""

from kvtools import World, toks
from tiered import TieredPrefixCachingBlockPool


def test_stops_at_first_miss(observe):
    # 1. X[0] nowhere, X[1] in host, X[2] on the GPU.
    w = World(TieredPrefixCachingBlockPool, num_blocks=4, capacity=1)
    pool = w.pool
    x = w.name("X", toks(100, 3))
    w.serve(x, head_first=True)
    held_f = w.run(w.name("F", toks(200, 2)))
    held_g = w.run(w.name("G", toks(300, 1)))
    observe("case 1: host keys", w.host_keys())
    observe("case 1: GPU blocks of X[0..2]", [pool.hash_to_block.get(h) for h in pool.block_hashes(x)])
    before = w.counters()
    observe("case 1: lookup(X) returns", pool.lookup(x))
    observe("case 1: counters added: queries, hits, offloaded, loaded", [a - b for a, b in zip(w.counters(), before)])
    observe("case 1: free_queue after", list(pool.free_queue))
    observe("case 1: host keys after", w.host_keys())
    w.release(held_f, head_first=True)
    w.release(held_g, head_first=True)
    observe("case 1: broken invariants", w.problems())

    # 2. X[0] on the GPU (in use), X[1] nowhere, X[2] in host.
    w = World(TieredPrefixCachingBlockPool, num_blocks=6, capacity=2)
    pool = w.pool
    x = w.name("X", toks(100, 3))
    blocks_x = w.run(x)
    pool.touch([blocks_x[0]])                             # a running request holds X[0]
    pool.free(blocks_x[::-1])
    w.serve(w.name("F", toks(200, 3)), head_first=True)
    w.serve(w.name("G", toks(300, 1)), head_first=True)           # X[1] goes to host
    pool.touch([blocks_x[2]])                             # keep X[2] on the GPU for now
    w.serve(w.name("H", toks(400, 2)), head_first=True)           # X[1] evicted from host
    pool.free([blocks_x[2]])
    w.serve(w.name("J", toks(500, 5)), head_first=True)           # X[2] goes to host
    observe("case 2: host keys", w.host_keys())
    observe("case 2: GPU blocks of X[0..2]", [pool.hash_to_block.get(h) for h in pool.block_hashes(x)])
    before = w.counters()
    observe("case 2: lookup(X) returns", pool.lookup(x))
    observe("case 2: counters added: queries, hits, offloaded, loaded", [a - b for a, b in zip(w.counters(), before)])
    observe("case 2: host keys after (X[2] was not used)", w.host_keys())
    pool.free([blocks_x[0]])
    observe("case 2: broken invariants", w.problems())

    # 3. X[0] in host, X[1] nowhere, X[2] on the GPU and free.
    w = World(TieredPrefixCachingBlockPool, num_blocks=4, capacity=1)
    pool = w.pool
    x = w.name("X", toks(100, 3))
    blocks_x = w.run(x)
    pool.free([blocks_x[i] for i in (2, 0, 1)])
    held_f = w.run(w.name("F", toks(200, 2)))
    held_g = w.run(w.name("G", toks(300, 1)))
    observe("case 3: host keys", w.host_keys())
    observe("case 3: GPU blocks of X[0..2]", [pool.hash_to_block.get(h) for h in pool.block_hashes(x)])
    before = w.counters()
    found = pool.lookup(x)
    observe("case 3: lookup(X) returns", found)
    observe("case 3: content numbers in returned blocks", w.tags(found))
    observe("case 3: counters added: queries, hits, offloaded, loaded", [a - b for a, b in zip(w.counters(), before)])
    observe("case 3: host keys after", w.host_keys())
    observe("case 3: lookup(X) again returns", pool.lookup(x))
    w.release(held_f, head_first=True)
    w.release(held_g, head_first=True)
    observe("case 3: broken invariants", w.problems())
