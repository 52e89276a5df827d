"""The rules one at a time: LRU host memory, when not to offload, the lookup walk, counters, and
what a lookup returns when it cannot get fresh blocks."""

from fake_kv import (Contents, FakeKV, host_copy_tag, names_of_hashes, release, run_prompt, serve,
                     trace_pool)
from tiered import TieredPrefixCachingBlockPool

BS = 4


def make(num_blocks, capacity, num_layers=2):
    pool = trace_pool(TieredPrefixCachingBlockPool(num_blocks, BS, capacity))
    kv = FakeKV(num_layers, num_blocks)
    pool.kv = kv
    return pool, kv, Contents()


def test_host_is_lru_with_capacity(observe):
    pool, kv, contents = make(num_blocks=3, capacity=2)
    a, b, c = [1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]
    d = list(range(20, 32))  # 3 blocks
    names = names_of_hashes(pool, {"A": a, "B": b, "C": c, "D": d})
    host = lambda: [names.get(h, "?") for h in pool.host]

    for p in (a, b, c):
        serve(pool, kv, contents, p, head_first=True)
    observe("free_queue after A, B, C", list(pool.free_queue))

    blocks_d = run_prompt(pool, kv, contents, d)  # reuses A's, B's and C's blocks, in that order
    observe("host keys after D (capacity 2)", host())
    observe("num_offloaded after D", pool.num_offloaded)
    observe("host copies hold content numbers", [host_copy_tag(e) for e in pool.host.values()])
    release(pool, blocks_d)

    found = pool.lookup(b)  # a host hit is a use: B becomes most recently used
    observe("lookup(B) returns", found)
    observe("content numbers in returned blocks", [kv.tag(blk) for blk in found])
    observe("host keys after lookup(B)", host())

    observe("lookup(C) returns", pool.lookup(c))
    observe("host keys at the end", host())
    observe("num_offloaded, num_loaded at the end", [pool.num_offloaded, pool.num_loaded])


def test_when_not_to_offload(observe):
    # Capacity 0: the pool behaves like a plain prefix cache.
    pool, kv, contents = make(num_blocks=2, capacity=0)
    a, b = [1, 2, 3, 4], [5, 6, 7, 8, 9, 10, 11, 12]
    serve(pool, kv, contents, a, head_first=True)
    serve(pool, kv, contents, b, head_first=True)
    observe("capacity 0: num_offloaded", pool.num_offloaded)
    observe("capacity 0: host size", len(pool.host))
    observe("capacity 0: lookup(A) returns", pool.lookup(a))

    pool, kv, contents = make(num_blocks=3, capacity=4)
    p = [1, 2, 3, 4, 5, 6]              # one full block, then a partial block (no hash)
    q = list(range(10, 22))             # 3 blocks
    r = list(range(30, 42))             # 3 blocks
    names = names_of_hashes(pool, {"P": p, "Q": q, "R": r})
    host = lambda: [names.get(h, "?") for h in pool.host]

    serve(pool, kv, contents, p)
    serve(pool, kv, contents, q)  # the partial block is not offloaded
    observe("after Q: num_offloaded", pool.num_offloaded)
    observe("after Q: host keys", host())

    found = pool.lookup(p)
    observe("lookup(P) returns", found)
    observe("content numbers in returned blocks", [kv.tag(blk) for blk in found])
    observe("after lookup(P): host keys", host())

    # P[0] is now on the GPU again and still in host memory: reusing its block copies nothing.
    serve(pool, kv, contents, r)
    observe("after R: num_offloaded", pool.num_offloaded)
    observe("after R: host keys", host())
    observe("after R: host copies hold content numbers", [host_copy_tag(e) for e in pool.host.values()])


def test_lookup_walk_and_counters(observe):
    pool, kv, contents = make(num_blocks=4, capacity=1)
    x = list(range(100, 112))  # X[0], X[1], X[2]
    y = list(range(200, 208))  # 2 blocks
    z = list(range(300, 304))  # 1 block
    names = names_of_hashes(pool, {"X": x, "Y": y, "Z": z})
    host = lambda: [names.get(h, "?") for h in pool.host]

    serve(pool, kv, contents, x, head_first=True)
    serve(pool, kv, contents, y)  # reuses X[0]'s block
    serve(pool, kv, contents, z, head_first=True)             # reuses X[1]'s block; X[0] is evicted
    observe("host keys", host())
    observe("GPU blocks holding X[0], X[1], X[2]", [pool.hash_to_block.get(h) for h in pool.block_hashes(x)])

    before = [pool.num_queries, pool.num_hits, pool.num_loaded]
    observe("lookup(X) returns (X[0] is nowhere)", pool.lookup(x))
    observe("counters added by lookup(X): queries, hits, loaded",
            [pool.num_queries - before[0], pool.num_hits - before[1], pool.num_loaded - before[2]])

    before = [pool.num_queries, pool.num_hits, pool.num_loaded]
    found = pool.lookup(z + [1, 2, 3])  # one full block (a GPU hit) and a partial one
    observe("lookup(Z + 3 tokens) returns", found)
    observe("counters added by lookup(Z + 3 tokens): queries, hits, loaded",
            [pool.num_queries - before[0], pool.num_hits - before[1], pool.num_loaded - before[2]])

    # A 2-block prompt reuses X[2]'s and Y[1]'s blocks: Y[0] stays on the GPU, Y[1] goes to host.
    serve(pool, kv, contents, list(range(400, 408)), head_first=True)
    observe("host keys after another prompt", host())
    before = [pool.num_queries, pool.num_hits, pool.num_loaded]
    found = pool.lookup(y + list(range(500, 504)))
    observe("lookup(Y + a new block) returns", found)
    observe("content numbers in returned blocks", [kv.tag(blk) for blk in found])
    observe("content numbers Y was computed with", [contents.of(y[:BS]), contents.of(y)])
    observe("host keys after lookup(Y + a new block)", host())
    observe("counters added by lookup(Y + a new block): queries, hits, loaded",
            [pool.num_queries - before[0], pool.num_hits - before[1], pool.num_loaded - before[2]])


def test_lookup_refreshes_free_gpu_hits(observe):
    pool, kv, contents = make(num_blocks=4, capacity=2)
    a, b, c, d = [1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12], list(range(20, 28))
    names = names_of_hashes(pool, {"A": a, "B": b, "C": c, "D": d})
    for p in (a, b, c):
        serve(pool, kv, contents, p)
    observe("free_queue after A, B, C", list(pool.free_queue))

    # Only GPU hits, nothing to reload: the free hit still goes to the end of free_queue.
    observe("lookup(A) returns", pool.lookup(a))
    observe("free_queue after lookup(A)", list(pool.free_queue))

    serve(pool, kv, contents, d)  # two blocks from the front of free_queue
    observe("host keys after D", [names.get(h, "?") for h in pool.host])
    observe("lookup(A) after D returns", pool.lookup(a))


def test_allocation_failure(observe):
    pool, kv, contents = make(num_blocks=4, capacity=4)
    a = list(range(100, 112))  # A[0], A[1], A[2]
    names = names_of_hashes(pool, {"A": a})
    host = lambda: [names.get(h, "?") for h in pool.host]

    serve(pool, kv, contents, a)
    held_b = run_prompt(pool, kv, contents, list(range(200, 208)))  # reuses A[2]'s block, kept
    held_c = run_prompt(pool, kv, contents, list(range(300, 304)))  # reuses A[1]'s block, kept
    observe("host keys", host())
    observe("free_queue", list(pool.free_queue))

    # A[0] is a free GPU hit, A[1] and A[2] are host hits, but only A[0]'s block is free.
    found = pool.lookup(a)
    observe("lookup(A) with no block to spare returns", found)
    observe("free_queue after the failed reload", list(pool.free_queue))
    observe("ref_cnt after the failed reload", list(pool.ref_cnt))
    observe("host keys after the failed reload", host())
    observe("num_hits, num_loaded, num_offloaded", [pool.num_hits, pool.num_loaded, pool.num_offloaded])

    release(pool, held_c, head_first=True)
    observe("lookup(A) with one block to spare returns", pool.lookup(a))

    release(pool, held_b)
    found = pool.lookup(a)
    observe("lookup(A) with enough blocks returns", found)
    observe("content numbers in returned blocks", [kv.tag(blk) for blk in found])
    observe("free_queue at the end", list(pool.free_queue))
    observe("num_hits, num_loaded, num_offloaded at the end", [pool.num_hits, pool.num_loaded, pool.num_offloaded])
