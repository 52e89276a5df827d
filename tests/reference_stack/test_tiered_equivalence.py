"""Problem 143's accepted submissions behave exactly like the reference pool on random workloads,
state compared after every operation; the chapter's code with its crash kept does crash, with a
KeyError in `lookup`."""

import importlib.util
import random
from pathlib import Path

import pytest

import reference  # noqa: F401

from kv_cache import KVCache
from tiered import TieredPrefixCachingBlockPool as Reference

BS = 2
SUBMISSIONS = Path(__file__).resolve().parents[2] / "problems" / "143-tiered-kv-cache" / "submissions"
ACCEPTED = sorted(SUBMISSIONS.glob("accepted/*.py"))


def load(path):
    spec = importlib.util.spec_from_file_location(f"submission_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.TieredPrefixCachingBlockPool


# Prompts share prefixes (system prompt + question) so that both tiers get hits.
PROMPTS = [[s] * BS + [s + 1] * BS + [q] * (BS * (q % 3)) + [7] * (q % 2)
           for s in (10, 20) for q in range(1, 6)]



def workload(seed, steps=150):
    """A seeded random workload: pool size, host capacity and operations."""
    rng = random.Random(seed)
    kinds = ["serve", "serve", "finish", "lookup", "allocate"]
    ops = [(rng.choice(kinds), rng.randrange(len(PROMPTS)), rng.random() < 0.5) for _ in range(steps)]
    return ops, rng.randint(3, 8), rng.randint(0, 4)


def trace(pool_cls, ops, num_blocks, capacity):
    """Runs `ops` the way the engine drives a pool; returns what could be observed after each."""
    pool = pool_cls(num_blocks, BS, capacity)
    kv = KVCache(2, num_blocks, BS, 1, 2)
    pool.kv = kv
    held, out, stamp = [], [], [0]

    def compute(block):
        stamp[0] += 1
        for layer in range(2):
            kv.k[layer][block].fill_(stamp[0])
            kv.v[layer][block].fill_(-stamp[0])

    for op, i, flag in ops:
        tokens = PROMPTS[i]
        result = None
        if op == "serve":
            hits = pool.lookup(tokens[:-1])
            pool.touch(hits)
            new = pool.allocate(-(-len(tokens) // BS) - len(hits))
            if new is None:
                pool.free(hits)
            else:
                for b in new:
                    compute(b)
                table = hits + new
                pool.cache_blocks(tokens, table, len(tokens))
                if flag:  # a request that finishes at once keeps the pool churning
                    pool.free(table)
                else:
                    held.append(table)
            result = hits
        elif op == "finish" and held:
            pool.free(held.pop(i % len(held)))
        elif op == "lookup":
            result = pool.lookup(tokens)
        elif op == "allocate":
            result = pool.allocate(1)
            if result is not None:
                held.append(result)
        out.append([op, result, list(pool.free_queue), list(pool.ref_cnt), list(pool.hash_to_block.items()),
                    list(pool.host), pool.num_queries, pool.num_hits, pool.num_offloaded, pool.num_loaded,
                    [kv.k[1][b][0, 0, 0].item() for b in (result or [])]])
    return out


@pytest.mark.parametrize("path", ACCEPTED, ids=lambda p: p.stem)
def test_accepted_submission_matches_reference(path):
    pool_cls = load(path)
    for seed in range(40):
        ops, num_blocks, capacity = workload(seed)
        expected = trace(Reference, ops, num_blocks, capacity)
        got = trace(pool_cls, ops, num_blocks, capacity)
        for step, (want, have) in enumerate(zip(expected, got)):
            assert have == want, (f"{path.name}, seed {seed}: differs from the reference at "
                                  f"operation {step}: {ops[step]}")


@pytest.mark.parametrize("path", sorted(SUBMISSIONS.glob("wrong_answer/*.py")), ids=lambda p: p.stem)
def test_known_wrong_submission_differs_from_reference(path):
    """The comparison above has teeth: every known-wrong file departs from the reference (or
    crashes) on the same workloads."""
    pool_cls = load(path)
    for seed in range(40):
        ops, num_blocks, capacity = workload(seed)
        expected = trace(Reference, ops, num_blocks, capacity)
        try:
            if trace(pool_cls, ops, num_blocks, capacity) != expected:
                return
        except Exception:
            return
    pytest.fail(f"{path.name} behaved like the reference on every workload")


def test_accepted_submissions_cover_the_chapter_style():
    assert {p.stem for p in ACCEPTED} >= {"chapter_walkthrough", "host_store", "touch_and_release"}


def test_chapter_code_as_printed_crashes_when_the_host_tier_is_small():
    chapter = load(SUBMISSIONS / "wrong_answer" / "rereads_host_after_allocate.py")
    # P (3 full blocks) is served and finished; Q's allocation pushes all three to a host tier of
    # 2 (P[0], P[1] stay); looking P up again allocates 2 blocks for the host hits, which offloads
    # Q[1] and evicts P[1] before it is read back.
    ops = [("serve", 3, False), ("finish", 0, False), ("serve", 7, False), ("finish", 0, False),
           ("lookup", 3, False)]
    expected = trace(Reference, ops, 3, 2)
    assert expected[-1][1] == [0, 1] and expected[-1][-2] == 2, "the reference reloads both blocks"
    with pytest.raises(KeyError) as err:
        trace(chapter, ops, 3, 2)
    assert err.traceback[-1].name == "lookup"
