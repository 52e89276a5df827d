"""(b) The lookup walk across three tiers: GPU, host, disk in prefix order; free GPU hits survive the
allocation for the reloads; in-use hits keep their references; the walk stops at the first block
found nowhere."""

from kvtools import World, toks


def test_mixed_tiers_protect_free_gpu_hits(observe, tmp_path):
    w = World(tmp_path, num_blocks=8, host=2, disk=16)
    pool = w.pool
    x = w.name("X", toks(100, 6))
    blocks_x = w.run(x)                                     # X[0..5] in blocks 0..5
    pool.free([blocks_x[i] for i in (4, 2, 0, 5, 3, 1)])    # X[1], X[3], X[5] reused first
    w.serve(w.name("F", toks(500, 5)))                      # blocks 6, 7 and X[1], X[3], X[5]'s
    observe("free_queue before", list(pool.free_queue))
    observe("host keys, disk keys, files before", w.tiers())

    found = pool.lookup(x)                                  # GPU, disk, GPU, host, GPU, host
    observe("lookup(X) returns", found)
    observe("returned blocks are distinct", len(set(found)) == len(found))
    observe("every returned block holds the KV of its prefix", w.tags(found) == w.expected_tags(x, 6))
    observe("free_queue after", list(pool.free_queue))
    observe("ref_cnt after", list(pool.ref_cnt))
    observe("host keys, disk keys, files after", w.tiers())
    observe("counters: hit tokens by tier, all, queries; copies", w.counters())
    observe("broken invariants", w.problems())

    blocks = w.run(x + toks(900, 1))
    observe("block table of X + 1 block", blocks)
    observe("content numbers in it", w.tags(blocks))
    w.release(blocks)
    observe("broken invariants at the end", w.problems())


def test_in_use_hits_and_disk_hits(observe, tmp_path):
    w = World(tmp_path, num_blocks=8, host=1, disk=8, num_layers=3)
    pool = w.pool
    x = w.name("X", toks(100, 6))
    w.serve(x, head_first=True)
    held = w.run(x[:8])                                     # a running request holds X[0], X[1]
    filler = w.run(w.name("F", toks(500, 5)))               # X[2], X[3], X[4] pushed down
    w.release(filler, head_first=True)
    observe("free_queue before", list(pool.free_queue))
    observe("host keys, disk keys, files before", w.tiers())

    found = pool.lookup(x)                                  # in use, in use, disk, disk, host, GPU
    observe("lookup(X) returns", found)
    observe("every returned block holds the KV of its prefix", w.tags(found) == w.expected_tags(x, 6))
    observe("ref_cnt after", list(pool.ref_cnt))
    observe("free_queue after", list(pool.free_queue))
    observe("host keys, disk keys, files after", w.tiers())
    observe("counters: hit tokens by tier, all, queries; copies", w.counters())
    observe("broken invariants", w.problems())

    w.release(held, head_first=True)
    blocks = w.run(x)
    observe("block table of X", blocks)
    w.release(blocks, head_first=True)
    observe("ref_cnt at the end", list(pool.ref_cnt))
    observe("broken invariants at the end", w.problems())


def test_stops_at_first_miss(observe, tmp_path):
    # 1. X[0] on the GPU, X[1] nowhere, X[2] on disk: only X[0].
    w = World(tmp_path, num_blocks=5, host=0, disk=1, folder="one")
    pool = w.pool
    x = w.name("X", toks(100, 3))
    blocks_x = w.run(x)
    pool.touch([blocks_x[0]])                               # a running request holds X[0]
    pool.free([blocks_x[0], blocks_x[2], blocks_x[1]])      # X[1]'s block first in line, then X[2]'s
    held = w.run(w.name("F", toks(200, 4)))                 # X[1] to disk, then X[2] pushes it out
    observe("case 1: host keys, disk keys, files", w.tiers())
    observe("case 1: GPU blocks of X[0..2]", [pool.hash_to_block.get(h) for h in pool.block_hashes(x)])
    before = w.counters()
    observe("case 1: lookup(X) returns", pool.lookup(x))
    observe("case 1: counters added", [a - b for a, b in zip(w.counters(), before)])
    observe("case 1: host keys, disk keys, files after", w.tiers())
    w.release(held)
    pool.free([blocks_x[0]])
    observe("case 1: broken invariants", w.problems())

    # 2. X[0] nowhere, X[1] in host, X[2] on disk: nothing, and nothing moves.
    w = World(tmp_path, num_blocks=4, host=1, disk=1, folder="two")
    pool = w.pool
    x = w.name("X", toks(100, 3))
    blocks_x = w.run(x)
    pool.free([blocks_x[1], blocks_x[2], blocks_x[0]])      # reused in the order X[0], X[2], X[1]
    held_f = w.run(w.name("F", toks(200, 2)))               # X[0] to host
    held_g = w.run(w.name("G", toks(300, 1)))               # X[2] to host, X[0] to disk
    held_h = w.run(w.name("H", toks(400, 1)))               # X[1] to host, X[2] to disk, X[0] deleted
    observe("case 2: host keys, disk keys, files", w.tiers())
    w.release(held_h)
    w.release(held_g)
    w.release(held_f)
    before = w.counters()
    observe("case 2: lookup(X) returns", pool.lookup(x))
    observe("case 2: counters added", [a - b for a, b in zip(w.counters(), before)])
    observe("case 2: host keys, disk keys, files after", w.tiers())
    observe("case 2: free_queue after", list(pool.free_queue))
    observe("case 2: broken invariants", w.problems())
