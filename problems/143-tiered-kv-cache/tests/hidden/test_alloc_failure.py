"""(b) When the pool cannot give blocks for the host hits, lookup returns only the prefix before
the first host hit and leaves the pool as consistent as it found it."""

from kvtools import World, toks
from tiered import TieredPrefixCachingBlockPool


def test_allocation_failure_prefix(observe):
    w = World(TieredPrefixCachingBlockPool, num_blocks=5, capacity=8)
    pool = w.pool
    a = w.name("A", toks(100, 4))
    blocks_a = w.run(a)                                  # A[0..3] in blocks 0..3
    pool.free([blocks_a[i] for i in (2, 1, 3, 0)])
    held_p = w.run(w.name("P", toks(300, 2)))            # reuses 4 and A[0]'s block
    pool.touch([blocks_a[2]])                            # a running request holds A[2]
    held_q = w.run(w.name("Q", toks(400, 1)))            # reuses A[3]'s block
    observe("host keys", w.host_keys())
    observe("free_queue", list(pool.free_queue))
    before = w.counters()

    # host, free GPU, GPU in use, host -- and no block to spare.
    found = pool.lookup(a)
    observe("lookup(A) returns (first block is a host hit, no free block)", found)
    observe("free_queue after", list(pool.free_queue))
    observe("ref_cnt after", list(pool.ref_cnt))
    observe("host keys after", w.host_keys())
    observe("counters added: queries, hits, offloaded, loaded", [x - y for x, y in zip(w.counters(), before)])
    observe("broken invariants", w.problems())

    # One more block free, holding a cached prefix, still one short: nothing may be offloaded.
    w.release(held_q, head_first=True)
    before = w.counters()
    found = pool.lookup(a)
    observe("lookup(A) returns (one block short)", found)
    observe("free_queue after one short", list(pool.free_queue))
    observe("host keys after one short", w.host_keys())
    observe("counters added by one short: queries, hits, offloaded, loaded",
            [x - y for x, y in zip(w.counters(), before)])
    observe("broken invariants after one short", w.problems())

    w.release(held_p, head_first=True)
    pool.free([blocks_a[2]])
    found = pool.lookup(a)
    observe("lookup(A) returns (enough blocks)", found)
    observe("every returned block holds the KV of its prefix", w.tags(found) == w.expected_tags(a, 4))
    observe("free_queue at the end", list(pool.free_queue))
    observe("queries, hits, offloaded, loaded at the end", w.counters())
    observe("broken invariants at the end", w.problems())


def test_allocation_failure_keeps_gpu_prefix(observe):
    w = World(TieredPrefixCachingBlockPool, num_blocks=6, capacity=8)
    pool = w.pool
    b = w.name("B", toks(100, 5))
    blocks_b = w.run(b)                                   # B[0..4] in blocks 0..4
    pool.free([blocks_b[i] for i in (3, 1, 0, 4, 2)])
    held = w.run(w.name("F", toks(500, 3)))               # reuses 5 and B[2], B[4]'s blocks
    observe("host keys", w.host_keys())
    observe("free_queue", list(pool.free_queue))

    found = pool.lookup(b)                                # GPU, GPU, host, GPU, host; no spare block
    observe("lookup(B) returns", found)
    observe("every returned block holds the KV of its prefix", w.tags(found) == w.expected_tags(b, len(found)))
    observe("free_queue after", list(pool.free_queue))
    observe("ref_cnt after", list(pool.ref_cnt))
    observe("host keys after", w.host_keys())
    observe("queries, hits, offloaded, loaded", w.counters())
    observe("broken invariants", w.problems())

    # The engine then cannot fit B either and gives everything back.
    observe("serving B returns", w.run(b))
    observe("free_queue after serving failed", list(pool.free_queue))
    observe("broken invariants after serving failed", w.problems())

    w.release(held)
    blocks = w.run(b)
    observe("block table of B with enough room", blocks)
    observe("content numbers in it", w.tags(blocks))
    observe("queries, hits, offloaded, loaded at the end", w.counters())
    w.release(blocks, head_first=True)
    observe("broken invariants at the end", w.problems())
