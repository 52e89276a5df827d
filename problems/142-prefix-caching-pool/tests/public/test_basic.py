"""The rules one at a time: chained hashes, allocate and free, lookup, cache_blocks, touch and
the counters."""

from pool_driver import Driver, cached, identities, names_of_hashes, trace_pool
from prefix_cache import PrefixCachingBlockPool

BS = 4


def test_block_hashes_are_chained(observe):
    pool = trace_pool(PrefixCachingBlockPool(num_blocks=4, block_size=BS))
    x, y, z = [1, 2, 3, 4], [5, 6, 7, 8], [9, 9, 9, 9]
    observe("number of hashes of 0, 3, 4, 7, 8, 9 tokens",
            [len(pool.block_hashes(list(range(n)))) for n in (0, 3, 4, 7, 8, 9)])
    xy, zy = pool.block_hashes(x + y), pool.block_hashes(z + y)
    observe("block_hashes(x + y) starts with block_hashes(x)", xy[:1] == pool.block_hashes(x))
    observe("block_hashes(x + y + 2 more tokens) == block_hashes(x + y)",
            pool.block_hashes(x + y + [1, 2]) == xy)
    observe("block y has the same hash after x as after z", xy[1] == zy[1])
    observe("block y after x has the same hash as block x", xy[1] == xy[0])
    observe("hashes are computed again the same way", pool.block_hashes(x + y) == xy)
    observe("no hash is None", None not in xy + zy)


def test_allocate_and_free(observe):
    pool = trace_pool(PrefixCachingBlockPool(num_blocks=5, block_size=BS))
    observe("a new pool: free_queue", list(pool.free_queue))
    observe("a new pool: ref_cnt", list(pool.ref_cnt))
    first = pool.allocate(2)
    second = pool.allocate(3)
    observe("allocate(2), then allocate(3) return", [first, second])
    observe("ref_cnt after both", list(pool.ref_cnt))
    observe("allocate(1) with nothing free returns", pool.allocate(1))
    pool.free(second)
    observe("free_queue after free([2, 3, 4]): last block first", list(pool.free_queue))
    observe("allocate(4) with 3 free returns", pool.allocate(4))
    observe("free_queue after the failed allocate", list(pool.free_queue))
    pool.free(first)
    observe("free_queue after free([0, 1])", list(pool.free_queue))
    observe("num_free()", pool.num_free())
    observe("allocate(0) returns", pool.allocate(0))
    observe("allocate(2) returns", pool.allocate(2))
    observe("enable_caching", getattr(pool, "enable_caching", "missing"))


def test_lookup_moves_nothing(observe):
    pool = trace_pool(PrefixCachingBlockPool(num_blocks=6, block_size=BS))
    driver = Driver(pool)
    a = list(range(10, 22))                           # A[0], A[1], A[2]
    driver.serve(a)
    observe("free_queue after A", list(pool.free_queue))
    found = pool.lookup(a)
    observe("lookup(A) returns", found)
    observe("free_queue after lookup(A)", list(pool.free_queue))
    observe("ref_cnt after lookup(A)", list(pool.ref_cnt))
    observe("lookup(A) again returns", pool.lookup(a))
    observe("lookup(A[0], A[1] and 3 more tokens) returns", pool.lookup(a[:8] + [1, 2, 3]))
    observe("lookup(a prompt never seen) returns", pool.lookup([7, 7, 7, 7, 7]))
    observe("free_queue at the end", list(pool.free_queue))


def test_lookup_stops_at_first_miss(observe):
    pool = trace_pool(PrefixCachingBlockPool(num_blocks=4, block_size=BS))
    driver = Driver(pool)
    a = list(range(10, 22))                           # A[0], A[1], A[2]
    d = [50, 51, 52, 53, 54, 55, 56, 57]
    names = names_of_hashes(pool, {"A": a, "D": d})
    table = driver.run(a)
    pool.free([table[1], table[2], table[0]])        # the last block first: A[0]'s goes back first
    observe("free_queue", list(pool.free_queue))
    driver.serve(d)                                   # two blocks: the free block and A[0]'s
    observe("what each block holds", identities(pool, names))
    observe("lookup(A) returns (A[0] is gone)", pool.lookup(a))
    observe("lookup(A[1:]) returns (a different prefix)", pool.lookup(a[4:]))


def test_cache_blocks_rules(observe):
    pool = trace_pool(PrefixCachingBlockPool(num_blocks=8, block_size=BS))
    a = list(range(10, 24))                           # A[0..2] and 2 more tokens
    names = names_of_hashes(pool, {"A": a})
    table = pool.allocate(4)
    pool.cache_blocks(a, table, 5)
    observe("after cache_blocks(A, table, num_computed=5)", cached(pool, names))
    pool.cache_blocks(a, table, 11)
    observe("after cache_blocks(A, table, num_computed=11)", cached(pool, names))
    pool.cache_blocks(a, table, len(a))
    observe("after cache_blocks(A, table, num_computed=14)", cached(pool, names))
    pool.cache_blocks(a, table, len(a))
    observe("after the same call again", identities(pool, names))

    # The same prefix computed again on other blocks (no lookup first): the first copy stays
    # the cached one, the new blocks stay anonymous.
    other = pool.allocate(2)
    pool.cache_blocks(a[:8], other, 8)
    observe("blocks of a second copy of A[0], A[1]", other)
    observe("what each block holds after the second copy", identities(pool, names))
    pool.free(table)
    observe("lookup(A) after the first copy was freed", pool.lookup(a))
    pool.free(other)
    observe("free_queue at the end", list(pool.free_queue))


def test_reuse_forgets_identity(observe):
    pool = trace_pool(PrefixCachingBlockPool(num_blocks=3, block_size=BS))
    driver = Driver(pool)
    a, b = [1, 2, 3, 4, 5, 6, 7, 8], [9, 10, 11, 12, 13, 14, 15, 16]
    names = names_of_hashes(pool, {"A": a, "B": b})
    driver.serve(a)
    driver.serve(b)                                   # the free block, then A's tail block
    observe("what each block holds after B", identities(pool, names))
    observe("the cache after B", cached(pool, names))
    found = pool.lookup(a)
    observe("lookup(A) returns", found)
    observe("the blocks found hold A's prefix", driver.hold_right_prefixes(found, a))
    found = pool.lookup(b)
    observe("lookup(B) returns", found)
    observe("the blocks found hold B's prefix", driver.hold_right_prefixes(found, b))


def test_touch_shared_blocks(observe):
    pool = trace_pool(PrefixCachingBlockPool(num_blocks=6, block_size=BS))
    driver = Driver(pool)
    system = list(range(100, 108))
    first = driver.run(system + [1, 2, 3])            # still running
    second = driver.run(system + [4, 5])              # shares the system prompt with the first
    observe("block tables of two running prompts", [first, second])
    observe("ref_cnt while both run", list(pool.ref_cnt))
    observe("free_queue while both run", list(pool.free_queue))
    driver.release(first)
    observe("ref_cnt after the first finished", list(pool.ref_cnt))
    observe("free_queue after the first finished", list(pool.free_queue))
    third = driver.run(system)
    observe("block table of a third prompt (the system prompt alone)", third)
    driver.release(second)
    driver.release(third)
    observe("ref_cnt at the end", list(pool.ref_cnt))
    observe("free_queue at the end", list(pool.free_queue))


def test_counters_in_tokens(observe):
    pool = trace_pool(PrefixCachingBlockPool(num_blocks=6, block_size=BS))
    driver = Driver(pool)
    log = []
    a = list(range(10, 21))                           # 11 tokens: 2 full blocks + 3
    for what, call in (("lookup of nothing", lambda: pool.lookup([])),
                       ("lookup of 3 tokens", lambda: pool.lookup([1, 2, 3])),
                       ("serve A (11 tokens)", lambda: driver.serve(a)),
                       ("lookup(A)", lambda: pool.lookup(a)),
                       ("lookup(A[0] + 1 token)", lambda: pool.lookup(a[:5])),
                       ("lookup(A[0] only)", lambda: pool.lookup(a[:4]))):
        call()
        log.append([what, pool.num_queries, pool.num_hits])
    observe("after each call: what, num_queries, num_hits", log)
