"""(c) When the pool cannot give blocks for the host and disk hits, lookup returns only the prefix
before the first of them: nothing is read back, copied down, moved or deleted."""

from kvtools import World, toks


def test_allocation_failure_prefix(observe, tmp_path):
    w = World(tmp_path, num_blocks=5, host=1, disk=8)
    pool = w.pool
    a = w.name("A", toks(100, 4))
    blocks_a = w.run(a)                                  # A[0..3] in blocks 0..3
    pool.free([blocks_a[i] for i in (1, 2, 3, 0)])
    held_p = w.run(w.name("P", toks(300, 3)))            # 4, then A[0] and A[3] go down
    held_q = w.run(w.name("Q", toks(400, 1)))            # A[2] goes down
    observe("host keys, disk keys, files", w.tiers())
    observe("free_queue", list(pool.free_queue))
    before = w.counters()

    # disk, GPU (free), host, disk -- and no block to spare.
    found = pool.lookup(a)
    observe("lookup(A) returns (no free block)", found)
    observe("free_queue after", list(pool.free_queue))
    observe("ref_cnt after", list(pool.ref_cnt))
    observe("host keys, disk keys, files after", w.tiers())
    observe("counters added", [x - y for x, y in zip(w.counters(), before)])
    observe("broken invariants", w.problems())

    # One cached block free, two short: still nothing may be copied.
    w.release(held_q, head_first=True)
    before = w.counters()
    found = pool.lookup(a)
    observe("lookup(A) returns (short of blocks)", found)
    observe("free_queue after short of blocks", list(pool.free_queue))
    observe("host keys, disk keys, files after short of blocks", w.tiers())
    observe("counters added short of blocks", [x - y for x, y in zip(w.counters(), before)])

    w.release(held_p, head_first=True)
    found = pool.lookup(a)
    observe("lookup(A) returns (enough blocks)", found)
    observe("every returned block holds the KV of its prefix", w.tags(found) == w.expected_tags(a, 4))
    observe("free_queue at the end", list(pool.free_queue))
    observe("host keys, disk keys, files at the end", w.tiers())
    observe("counters at the end", w.counters())
    observe("broken invariants at the end", w.problems())


def test_allocation_failure_disk_first(observe, tmp_path):
    w = World(tmp_path, num_blocks=3, host=0, disk=4)
    pool = w.pool
    a = w.name("A", toks(100, 2))
    w.serve(a, head_first=True)
    held = w.run(w.name("B", toks(200, 3)))              # A's blocks go to disk; B holds the pool
    observe("host keys, disk keys, files", w.tiers())
    found = pool.lookup(a)
    observe("lookup(A) returns (the first block is on disk, no free block)", found)
    observe("host keys, disk keys, files after", w.tiers())
    observe("counters", w.counters())
    observe("serving A returns", w.run(a))
    w.release(held)
    blocks = w.run(a)
    observe("block table of A with room", blocks)
    observe("content numbers in it", w.tags(blocks))
    observe("counters at the end", w.counters())
    w.release(blocks)
    observe("broken invariants", w.problems())
