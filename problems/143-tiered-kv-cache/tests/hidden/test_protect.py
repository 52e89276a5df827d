"""(a) Free GPU hits must survive the allocation made for the host hits next to them."""

from kvtools import World, toks
from tiered import TieredPrefixCachingBlockPool


def test_gpu_hits_protected(observe):
    w = World(TieredPrefixCachingBlockPool, num_blocks=8, capacity=16)
    pool = w.pool
    x = w.name("X", toks(100, 6))

    blocks_x = w.run(x)                       # X[0..5] in blocks 0..5
    pool.free([blocks_x[i] for i in (4, 2, 0, 5, 3, 1)])
    filler = w.run(w.name("F", toks(500, 5)))  # reuses 6, 7 and X[1], X[3], X[5]'s blocks
    w.release(filler)
    observe("free_queue before the lookup", list(pool.free_queue))
    observe("host keys before the lookup", w.host_keys())

    found = pool.lookup(x)                    # GPU, host, GPU, host, GPU, host
    observe("blocks returned by lookup(X)", found)
    observe("returned blocks are distinct", len(set(found)) == len(found))
    observe("every returned block holds the KV of its prefix", w.tags(found) == w.expected_tags(x, 6))
    observe("content numbers in returned blocks", w.tags(found))
    observe("free_queue after the lookup", list(pool.free_queue))
    observe("ref_cnt after the lookup", list(pool.ref_cnt))
    observe("host keys after the lookup", w.host_keys())
    observe("queries, hits, offloaded, loaded", w.counters())
    observe("broken invariants", w.problems())

    # Serve X + one more block: everything found is used, one block computed.
    blocks = w.run(x + toks(900, 1))
    observe("block table of X + 1 block", blocks)
    observe("content numbers in it", w.tags(blocks))
    w.release(blocks)
    observe("broken invariants at the end", w.problems())

    # A second round: the host hit comes first, the free GPU hits behind it lead free_queue.
    w2 = World(TieredPrefixCachingBlockPool, num_blocks=6, capacity=2, num_layers=3)
    y = w2.name("Y", toks(1000, 4))
    blocks_y = w2.run(y)
    w2.pool.free([blocks_y[i] for i in (3, 1, 2, 0)])
    w2.serve(w2.name("G", toks(2000, 3)), head_first=True)   # reuses 4, 5 and Y[0]'s block
    observe("round 2: free_queue before", list(w2.pool.free_queue))
    observe("round 2: host keys before", w2.host_keys())
    found = w2.pool.lookup(y)
    observe("round 2: blocks returned by lookup(Y)", found)
    observe("round 2: every returned block holds the KV of its prefix", w2.tags(found) == w2.expected_tags(y, 4))
    observe("round 2: free_queue after", list(w2.pool.free_queue))
    observe("round 2: host keys after", w2.host_keys())
    observe("round 2: broken invariants", w2.problems())


def test_in_use_hits_keep_their_references(observe):
    w = World(TieredPrefixCachingBlockPool, num_blocks=8, capacity=8)
    pool = w.pool
    x = w.name("X", toks(100, 6))

    w.serve(x, head_first=True)
    held = w.run(x[:8])                       # another request holds X[0], X[1]
    observe("the other request holds", held)
    filler = w.run(w.name("F", toks(500, 4)))  # reuses 6, 7 and X[2], X[3]'s blocks
    w.release(filler, head_first=True)
    observe("free_queue before the lookup", list(pool.free_queue))
    observe("host keys before the lookup", w.host_keys())

    found = pool.lookup(x)                    # in use, in use, host, host, free GPU, free GPU
    observe("blocks returned by lookup(X)", found)
    observe("every returned block holds the KV of its prefix", w.tags(found) == w.expected_tags(x, 6))
    observe("ref_cnt after the lookup", list(pool.ref_cnt))
    observe("free_queue after the lookup", list(pool.free_queue))
    observe("queries, hits, offloaded, loaded", w.counters())
    observe("broken invariants", w.problems())

    w.release(held, head_first=True)
    blocks = w.run(x)
    observe("block table of X, served", blocks)
    w.release(blocks, head_first=True)
    observe("ref_cnt at the end", list(pool.ref_cnt))
    observe("broken invariants at the end", w.problems())
