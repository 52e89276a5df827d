"""Block pools: the handbook's conventions, invariants under random operations, and the two-tier
pool's protected hits."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import reference  # noqa: F401

from kv_cache import KVCache
from paged import BlockPool
from prefix_cache import PrefixCachingBlockPool
from tiered import TieredPrefixCachingBlockPool

BS = 4


def check_invariants(pool):
    for b in range(pool.num_blocks):
        in_queue = b in pool.free_queue
        assert in_queue != (pool.ref_cnt[b] > 0), f"block {b}: in free_queue={in_queue}, ref_cnt={pool.ref_cnt[b]}"
        assert pool.ref_cnt[b] >= 0
    if isinstance(pool, PrefixCachingBlockPool):
        for h, b in pool.hash_to_block.items():
            assert pool.block_hash[b] == h
        for b, h in enumerate(pool.block_hash):
            if h is not None:
                assert pool.hash_to_block.get(h) == b
    if isinstance(pool, TieredPrefixCachingBlockPool):
        assert len(pool.host) <= pool.host_capacity


def fill(kv, block, value):
    for layer in range(kv.num_layers):
        kv.k[layer][block].fill_(value)
        kv.v[layer][block].fill_(-value)


def test_chained_hashes_cover_the_prefix():
    pool = PrefixCachingBlockPool(8, BS)
    a = pool.block_hashes([1, 2, 3, 4, 5, 6, 7, 8, 9])
    b = pool.block_hashes([9, 9, 9, 9, 5, 6, 7, 8])
    assert len(a) == 2 and len(b) == 2          # the partial block has no hash
    assert a[1] != b[1]                          # same tokens, different parent
    assert pool.block_hashes([1, 2, 3, 4, 5, 6, 7, 8]) == a


def test_allocate_reuses_front_and_forgets_identity():
    pool = PrefixCachingBlockPool(4, BS)
    toks = list(range(8))
    blocks = pool.allocate(2)
    pool.cache_blocks(toks, blocks, len(toks))
    pool.free(blocks)
    assert list(pool.free_queue) == [2, 3, 1, 0], "free releases the tail first"
    assert pool.lookup(toks) == [0, 1]
    assert list(pool.free_queue) == [2, 3, 1, 0], "a lookup moves nothing"
    assert (pool.num_queries, pool.num_hits) == (8, 8), "counters are in tokens"
    assert pool.allocate(5) is None and len(pool.free_queue) == 4
    assert pool.allocate(3) == [2, 3, 1]
    assert pool.block_hash[1] is None and pool.lookup(toks) == [0]
    assert (pool.num_queries, pool.num_hits) == (16, 12)
    check_invariants(pool)


def test_handbook_block_pool():
    pool = BlockPool(num_blocks=8)             # the chapter's pycon session
    table = pool.allocate(3)
    assert (table, pool.num_free()) == ([0, 1, 2], 5)
    pool.allocate(2)
    pool.free(table)                           # a plain pool frees in the order given
    assert pool.allocate(4) == [5, 6, 7, 0]
    with pytest.raises(ValueError):
        pool.free([1])                         # free already


def test_cache_blocks_registers_only_computed_full_blocks():
    pool = PrefixCachingBlockPool(4, BS)
    toks = list(range(10))
    blocks = pool.allocate(3)
    pool.cache_blocks(toks, blocks, 7)         # one full block computed so far
    assert pool.block_hash[blocks[0]] is not None and pool.block_hash[blocks[1]] is None
    pool.cache_blocks(toks, blocks, 10)        # the partial third block stays anonymous
    assert [pool.block_hash[b] for b in blocks[:2]] == pool.block_hashes(toks)
    assert pool.block_hash[blocks[2]] is None
    other = pool.allocate(1)                   # the same prefix in another block: first one wins
    pool.cache_blocks(toks[:4], other, 4)
    assert pool.block_hash[other[0]] is None
    assert pool.hash_to_block[pool.block_hashes(toks)[0]] == blocks[0]


ops = st.lists(st.tuples(st.sampled_from(["alloc", "free", "lookup_touch", "lookup"]),
                         st.integers(0, 5), st.integers(0, 3)), max_size=60)


@settings(max_examples=150, deadline=None)
@given(ops, st.sampled_from(["plain", "prefix", "tiered"]), st.integers(0, 6))
def test_invariants_under_random_operations(operations, kind, capacity):
    if kind == "plain":
        pool = BlockPool(6)
    elif kind == "prefix":
        pool = PrefixCachingBlockPool(6, BS)
    else:
        pool = TieredPrefixCachingBlockPool(6, BS, capacity)
        pool.kv = KVCache(2, 6, BS, 1, 2)
    prompts = [[p] * 4 + [p + 1] * 4 + [p + 2] * 4 for p in range(4)]
    held = []
    for op, n, p in operations:
        if op == "alloc":
            got = pool.allocate(n)
            if got is not None:
                if kind != "plain":
                    pool.cache_blocks(prompts[p], got, len(got) * BS)
                held.append(got)
        elif op == "free" and held:
            pool.free(held.pop(n % len(held)))
        elif op in ("lookup", "lookup_touch") and kind != "plain":
            blocks = pool.lookup(prompts[p])
            if op == "lookup_touch" and blocks:
                pool.touch(blocks)
                held.append(blocks)
        check_invariants(pool)


def protected_hit_scenario(pool_cls):
    """Block 0 holds prefix block A (free, cached on the GPU), B was offloaded to the host, and A
    sits at the front of free_queue: the next allocation would take it."""
    pool = pool_cls(4, BS, 8)
    kv = KVCache(2, 4, BS, 1, 2)
    pool.kv = kv
    toks = list(range(8))                    # two full blocks: A, B
    blocks = pool.allocate(2)                # [0, 1]
    fill(kv, blocks[0], 1.0)
    fill(kv, blocks[1], 2.0)
    pool.cache_blocks(toks, blocks, len(toks))
    pool.free([blocks[1]])                   # B free first: reused first
    pool.free([blocks[0]])
    other = pool.allocate(3)                 # takes 2, 3, then 1 (B): B goes to the host
    fill(kv, 1, 99.0)                        # block 1 now holds someone else's KV
    pool.free(other[:2])                     # 3, 2 free again; queue: [0, 3, 2]
    assert list(pool.free_queue)[0] == 0 and pool.ref_cnt[0] == 0
    hashes = pool.block_hashes(toks)
    result = pool.lookup(toks)
    return pool, kv, hashes, result


def test_protected_hits_hold_their_own_kv():
    pool, kv, hashes, result = protected_hit_scenario(TieredPrefixCachingBlockPool)
    assert len(result) == 2
    assert result[0] == 0, "the GPU hit must be returned, not overwritten"
    for block, value in zip(result, (1.0, 2.0)):
        assert torch.all(kv.k[1][block] == value) and torch.all(kv.v[0][block] == -value)
        assert pool.block_hash[block] == hashes[result.index(block)]
    assert pool.num_loaded == 1 and pool.num_hits == 2 * BS
    assert list(pool.free_queue) == [2, result[1], 0], "reloaded block, then the protected hit"
    check_invariants(pool)


def test_allocation_failure_returns_prefix_before_first_host_hit():
    pool = TieredPrefixCachingBlockPool(3, BS, 8)
    kv = KVCache(1, 3, BS, 1, 2)
    pool.kv = kv
    toks = list(range(8))
    a = pool.allocate(2)
    pool.cache_blocks(toks, a, len(toks))
    pool.free(a)                             # queue: [2, 1, 0]
    b = pool.allocate(2)                     # 2 and 1 (B offloaded); A in block 0 stays cached
    assert pool.num_offloaded == 1
    pool.touch([0])                          # everything in use: no block for B's reload
    assert pool.lookup(toks) == [0]
    pool.free(b)
    pool.free([0])
    check_invariants(pool)
    assert pool.num_loaded == 0


def test_host_is_lru_and_bounded():
    pool = TieredPrefixCachingBlockPool(2, BS, 2)
    pool.kv = KVCache(1, 2, BS, 1, 2)
    prompts = [[p] * BS for p in range(4)]
    for p in prompts:                        # each prompt cached then pushed out by the next
        got = pool.allocate(1)
        pool.cache_blocks(p, got, len(p))
        pool.free(got)
        pool.free(pool.allocate(2))
    assert len(pool.host) == 2
    h2, h3 = (pool.block_hashes(p)[0] for p in prompts[2:])
    assert list(pool.host) == [h2, h3]
    assert pool.num_offloaded == 4


def test_capacity_zero_counts_the_offload_it_drops():
    pool = TieredPrefixCachingBlockPool(1, BS, 0)
    pool.kv = KVCache(1, 1, BS, 1, 2)
    got = pool.allocate(1)
    pool.cache_blocks(list(range(BS)), got, BS)
    pool.free(got)
    pool.free(pool.allocate(1))
    assert pool.num_offloaded == 1 and len(pool.host) == 0


def test_host_hit_evicted_by_its_own_reload_allocation():
    """The chapter's crash: with a small host tier, allocating blocks for a lookup's host hits
    offloads other blocks and evicts the very entries being reloaded. The reference keeps the
    copies it found during the walk, reloads both blocks, and does not put evicted entries back."""
    pool = TieredPrefixCachingBlockPool(4, BS, 2)
    kv = KVCache(1, 4, BS, 1, 2)
    pool.kv = kv
    a = [1] * BS + [2] * BS                   # two blocks that will go to the host
    got = pool.allocate(2)
    for value, b in zip((1.0, 2.0), got):
        fill(kv, b, value)
    pool.cache_blocks(a, got, len(a))
    pool.free(got)
    taken = pool.allocate(4)                  # reuses everything: a's two blocks go to the host
    assert pool.num_offloaded == 2 and len(pool.host) == 2
    c = [7] * (2 * BS)                        # two other cached blocks, first in line for reuse
    pool.cache_blocks(c, taken[:2], len(c))
    for b in taken:
        fill(kv, b, 50.0)
    pool.free(taken[:2])
    pool.free(taken[2:])
    result = pool.lookup(a)                   # its allocation offloads c's blocks: a's entries evicted
    assert len(result) == 2 and pool.num_loaded == 2
    for value, b in zip((1.0, 2.0), result):
        assert torch.all(kv.k[0][b] == value)
    assert set(pool.host) == set(pool.block_hashes(c))
    check_invariants(pool)
