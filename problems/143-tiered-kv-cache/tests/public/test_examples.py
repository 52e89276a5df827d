"""The examples: a block comes back from host memory, and the statement's worked example."""

from fake_kv import (Contents, FakeKV, host_copy_tag, names_of_hashes, release, run_prompt, serve,
                     trace_pool)
from tiered import TieredPrefixCachingBlockPool

BS = 4  # tokens per block


def test_example_reload_from_host(observe):
    pool = trace_pool(TieredPrefixCachingBlockPool(num_blocks=4, block_size=BS, host_capacity_blocks=4))
    kv = FakeKV(num_layers=2, num_blocks=4)
    pool.kv = kv
    contents = Contents()
    a = list(range(100, 108))  # 2 full blocks
    b = list(range(200, 216))  # 4 full blocks
    names = names_of_hashes(pool, {"A": a, "B": b})

    blocks_a = run_prompt(pool, kv, contents, a)
    release(pool, blocks_a, head_first=True)
    observe("blocks of prompt A", blocks_a)

    # B needs all four blocks, so A's two cached blocks are reused: they go to host memory first.
    blocks_b = run_prompt(pool, kv, contents, b)
    release(pool, blocks_b, head_first=True)
    observe("blocks of prompt B", blocks_b)
    observe("num_offloaded after B", pool.num_offloaded)
    observe("host keys after B (least recently used first)", [names.get(h, "?") for h in pool.host])
    observe("content numbers of the host copies after B", [host_copy_tag(e) for e in pool.host.values()])

    # A again: both blocks are host hits; they are copied back into fresh GPU blocks.
    found = pool.lookup(a)
    observe("blocks returned by lookup(A)", found)
    observe("content numbers in returned blocks", [kv.tag(blk) for blk in found])
    observe("content numbers A's blocks were computed with", [contents.of(a[:BS]), contents.of(a[:2 * BS])])
    observe("num_loaded", pool.num_loaded)
    observe("num_offloaded", pool.num_offloaded)
    observe("host keys after lookup", [names.get(h, "?") for h in pool.host])
    observe("free_queue after lookup", list(pool.free_queue))
    observe("ref_cnt after lookup", list(pool.ref_cnt))
    observe("num_hits, num_queries", [pool.num_hits, pool.num_queries])


def test_example_protect_free_gpu_hits(observe):
    """The statement's worked example: a GPU hit that is free sits at the front of free_queue when
    the lookup needs a fresh block for the host hit behind it."""
    pool = trace_pool(TieredPrefixCachingBlockPool(num_blocks=4, block_size=BS, host_capacity_blocks=4))
    kv = FakeKV(num_layers=2, num_blocks=4)
    pool.kv = kv
    contents = Contents()
    a = [1, 2, 3, 4, 5, 6, 7, 8]                  # blocks A[0], A[1]
    c = [9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]  # blocks C[0], C[1], C[2]
    query = a + [21, 22, 23, 24]                  # A[0], A[1], then a block never seen
    names = names_of_hashes(pool, {"A": a, "C": c})

    blocks_a = run_prompt(pool, kv, contents, a)
    release(pool, blocks_a)  # last block first: tails are reused first
    observe("step 1: blocks of A", blocks_a)
    observe("step 1: free_queue", list(pool.free_queue))

    blocks_c = run_prompt(pool, kv, contents, c)
    release(pool, blocks_c)
    observe("step 2: blocks of C", blocks_c)
    observe("step 2: free_queue", list(pool.free_queue))
    observe("step 2: host keys", [names.get(h, "?") for h in pool.host])

    found = pool.lookup(query)
    observe("step 3: blocks returned by lookup(A + new block)", found)
    observe("step 3: content numbers in returned blocks", [kv.tag(blk) for blk in found])
    observe("step 3: content numbers of A[0], A[1]", [contents.of(a[:BS]), contents.of(a)])
    observe("step 3: free_queue", list(pool.free_queue))
    observe("step 3: host keys", [names.get(h, "?") for h in pool.host])
    observe("step 3: num_offloaded, num_loaded", [pool.num_offloaded, pool.num_loaded])
    observe("step 3: hash_to_block has A[0], A[1] at", [pool.hash_to_block.get(h) for h in pool.block_hashes(a)])

    # The engine then uses the found blocks and computes the rest.
    blocks_q = run_prompt(pool, kv, contents, query)
    observe("step 4: blocks of the query", blocks_q)
    observe("step 4: content numbers in them", [kv.tag(blk) for blk in blocks_q])
    observe("step 4: num_hits, num_queries", [pool.num_hits, pool.num_queries])
