"""Corners of each method: allocations that fail or take everything, lookups of nothing, of less
than a block, cache_blocks with partial progress, blocks shared by several requests."""

from pooltools import World, toks


def test_allocate_edges(observe):
    w = World(4, 4)
    pool = w.pool
    a = w.learn(toks(100, 2, 4), "A")
    w.serve(a)
    held = pool.allocate(1)                            # the free block at the front
    before = [list(pool.free_queue), w.identities(), dict(pool.hash_to_block)]
    observe("allocate(4) with 3 free returns", pool.allocate(4))
    after = [list(pool.free_queue), w.identities(), dict(pool.hash_to_block)]
    observe("the failed allocate changed nothing", before == after)
    observe("lookup(A) after the failed allocate", pool.lookup(a))
    observe("allocate(0) returns", pool.allocate(0))
    everything = pool.allocate(3)
    observe("allocate(3) takes every free block", everything)
    observe("what each block holds then", w.identities())
    observe("hash_to_block is empty", pool.hash_to_block == {})
    observe("lookup(A) with everything taken", pool.lookup(a))
    pool.free(everything)
    pool.free(held)
    observe("free_queue at the end", list(pool.free_queue))
    observe("broken invariants", w.problems())


def test_lookup_edges(observe):
    w = World(6, 4)
    pool = w.pool
    a = w.learn(toks(100, 3, 4, extra=2), "A")
    w.serve(a)
    cases = [("nothing", []), ("3 tokens", a[:3]), ("exactly A[0]", a[:4]),
             ("A[0] + 3 tokens", a[:7]), ("all of A", a), ("A + 10 more tokens", a + list(range(900, 910))),
             ("A[0] with its last token changed", a[:3] + [99999])]
    out = []
    for what, tokens in cases:
        before = [pool.num_queries, pool.num_hits]
        found = pool.lookup(tokens)
        out.append([what, found, pool.num_queries - before[0], pool.num_hits - before[1]])
    observe("lookup: what, blocks returned, num_queries added, num_hits added", out)
    observe("free_queue after all the lookups", list(pool.free_queue))
    observe("ref_cnt after all the lookups", list(pool.ref_cnt))


def test_cache_blocks_progress(observe):
    """As a long prompt is computed piece by piece, each call registers exactly the full blocks
    computed so far."""
    w = World(8, 4)
    pool = w.pool
    a = w.learn(toks(100, 5, 4, extra=1), "A")      # 21 tokens
    table = pool.allocate(6)
    for i, b in enumerate(table):
        w.held[b] = tuple(a[:(i + 1) * 4])
    seen = []
    for n in (0, 3, 4, 9, 12, 12, 20, 21):
        pool.cache_blocks(a, table, n)
        seen.append([n, w.identities()])
    observe("num_computed, what each block holds after cache_blocks", seen)
    pool.free(table)
    observe("free_queue", list(pool.free_queue))
    observe("lookup(A) returns", pool.lookup(a))
    observe("broken invariants", w.problems())


def test_shared_blocks_free_order(observe):
    w = World(8, 4)
    pool = w.pool
    s = w.learn(toks(100, 2, 4), "S")
    x = w.learn(s + toks(300, 2, 4), "X")
    y = w.learn(s + toks(400, 1, 4, extra=2), "Y")
    tx = w.run(x)
    ty = w.run(y)
    tz = w.run(s)
    observe("block tables of X, Y and S alone", [tx, ty, tz])
    observe("ref_cnt", list(pool.ref_cnt))
    pool.free(tx)
    observe("free_queue after X", list(pool.free_queue))
    pool.free(tz)
    observe("free_queue after S alone", list(pool.free_queue))
    pool.free(ty)
    observe("free_queue after Y", list(pool.free_queue))
    observe("what each block holds", w.identities())
    w.serve(w.learn(toks(900, 5, 4), "N"))
    observe("lookup(X), lookup(Y) after a 5-block prompt", [pool.lookup(x), pool.lookup(y)])
    observe("broken invariants", w.problems())


def test_duplicate_prefix_computed_twice(observe):
    """Two requests computing the same prompt at once (neither found the other's blocks): the
    first registered copy is the cached one; the other copy stays anonymous, and evicting it
    must not take the cached copy's hash with it."""
    w = World(8, 4)
    pool = w.pool
    a = w.learn(toks(100, 3, 4), "A")
    first = pool.allocate(3)
    second = pool.allocate(3)
    for table in (first, second):
        for i, b in enumerate(table):
            w.held[b] = tuple(a[:(i + 1) * 4])
    pool.cache_blocks(a, first, len(a))
    pool.cache_blocks(a, second, len(a))
    observe("what each block holds", w.identities())
    pool.free(second)
    pool.free(first)
    observe("free_queue", list(pool.free_queue))
    w.serve(w.learn(toks(900, 5, 4), "N"))             # reuses 6, 7 and the whole second copy
    observe("what each block holds after a 5-block prompt", w.identities())
    found = pool.lookup(a)
    observe("lookup(A) returns", found)
    observe("the blocks found hold A", w.right(found, a))
    observe("broken invariants", w.problems())
