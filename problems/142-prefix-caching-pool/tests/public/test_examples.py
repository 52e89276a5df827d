"""The statement's worked example, call by call, and the same pool driven like the engine."""

from pool_driver import Driver, cached, identities, names_of_hashes, trace_pool
from prefix_cache import PrefixCachingBlockPool

A = list(range(1, 11))      # 10 tokens: A[0], A[1] and a partial block
B = list(range(20, 36))     # 16 tokens: B[0..3]
C = [40, 41, 42, 43]        # 4 tokens: C[0]


def test_example_statement(observe):
    pool = trace_pool(PrefixCachingBlockPool(num_blocks=6, block_size=4))
    names = names_of_hashes(pool, {"A": A, "B": B, "C": C})

    blocks = pool.allocate(3)
    observe("step 1: allocate(3) returns", blocks)
    pool.cache_blocks(A, blocks, len(A))
    observe("step 1: what each block holds after cache_blocks(A, ...)", identities(pool, names))
    pool.free(blocks)
    observe("step 1: free_queue after free([0, 1, 2])", list(pool.free_queue))

    query = A[:8] + [90, 91, 92, 93]
    observe("step 2: lookup(A[0], A[1] + a new block) returns", pool.lookup(query))
    observe("step 2: free_queue after the lookup (it moves nothing)", list(pool.free_queue))
    observe("step 2: num_queries, num_hits", [pool.num_queries, pool.num_hits])

    observe("step 3: lookup(B) returns", pool.lookup(B))
    blocks = pool.allocate(4)
    observe("step 3: allocate(4) returns", blocks)
    pool.cache_blocks(B, blocks, len(B))
    pool.free(blocks)
    observe("step 3: free_queue after B is freed", list(pool.free_queue))

    blocks = pool.allocate(1)
    observe("step 4: allocate(1) for C returns", blocks)
    observe("step 4: what each block holds after the allocation", identities(pool, names))
    pool.cache_blocks(C, blocks, len(C))
    pool.free(blocks)
    observe("step 4: the cache after C", cached(pool, names))

    observe("step 5: lookup(A) returns", pool.lookup(A))
    observe("step 5: num_queries, num_hits", [pool.num_queries, pool.num_hits])


def test_example_shared_system_prompt(observe):
    pool = trace_pool(PrefixCachingBlockPool(num_blocks=8, block_size=4))
    driver = Driver(pool)
    system = list(range(100, 108))                   # two blocks every prompt starts with
    first, second = system + [1, 2, 3, 4, 5], system + [6, 7, 8]

    observe("first prompt: block table", driver.serve(first))
    observe("first prompt: tokens computed", driver.computed)
    found = pool.lookup(second)
    observe("lookup(second prompt) returns", found)
    observe("the blocks found hold the system prompt", driver.hold_right_prefixes(found, second))
    before = driver.computed
    observe("second prompt: block table", driver.serve(second))
    observe("second prompt: tokens computed", driver.computed - before)
    observe("num_queries, num_hits", [pool.num_queries, pool.num_hits])
