"""(i) The chapter's experiment on a tiny model, with a third tier: six conversations, three turns
each, all conversations of a turn generated together on a GPU pool of 24 blocks of 16 tokens, a
host tier of only 8 blocks and a disk tier of 200. The replies must be exactly those of a run
without any cache, under either write policy, and the work done (tokens computed per step)
exactly the reference's. (That this is less than a GPU-only cache computes is the chapter
experiment's own check: the reference run shows it, and the steps must match it.)"""

import random

import torch
from nano_engine import LLMEngine, SamplingParams
from three_tier import ThreeTierPrefixCachingBlockPool
from tiny_models import build_model

NUM_BLOCKS, BLOCK_SIZE, HOST_BLOCKS, DISK_BLOCKS, MAX_TOKENS = 24, 16, 8, 200, 20
NUM_CONVERSATIONS, NUM_TURNS = 6, 3


def conversation_pieces():
    """Synthetic token ids (the tiny model's vocabulary has 512): a shared "system prompt", one
    question per city and the follow-up questions."""
    rng = random.Random(144)
    system = [rng.randrange(1, 512) for _ in range(40)]
    questions = [[rng.randrange(1, 512) for _ in range(rng.randint(8, 13))] for _ in range(NUM_CONVERSATIONS)]
    follow_ups = [[rng.randrange(1, 512) for _ in range(n)] for n in (9, 11)]
    return system, questions, follow_ups


def run(model, pool):
    engine = LLMEngine(model, eos_token_id=None, pool=pool,
                       num_blocks=None if pool is not None else NUM_BLOCKS, block_size=BLOCK_SIZE)
    if pool is not None:
        pool.kv = engine.kv
    params = SamplingParams(max_tokens=MAX_TOKENS, ignore_eos=True)
    system, questions, follow_ups = conversation_pieces()
    prompts = [system + q for q in questions]
    replies_per_turn, computed_per_turn = [], []
    for turn in range(NUM_TURNS):
        before = engine.num_computed_tokens
        replies = engine.generate(prompts, params)
        computed_per_turn.append(engine.num_computed_tokens - before)
        replies_per_turn.append(replies)
        if turn + 1 < NUM_TURNS:
            prompts = [p + r + follow_ups[turn] for p, r in zip(prompts, replies)]
    return {"replies": replies_per_turn, "per_turn": computed_per_turn,
            "per_step": [s["num_tokens"] for s in engine.step_log]}


def counters(pool):
    return {"hit tokens (gpu, host, disk, all)": [pool.num_gpu_hits, pool.num_host_hits, pool.num_disk_hits,
                                                  pool.num_hits],
            "query tokens": pool.num_queries,
            "copies (host writes, disk writes, from host, from disk)": [
                pool.num_host_writes, pool.num_disk_writes, pool.num_loaded_from_host, pool.num_loaded_from_disk]}


def test_chapter_experiment(observe, device, tmp_path):
    # The model is tiny: one CPU thread is fastest, and several threads spin badly on a busy machine.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = build_model(seed=0, device=device)
        no_cache = run(model, None)
        pools, runs = {}, {}
        for policy in ("write_back", "write_through"):
            pools[policy] = ThreeTierPrefixCachingBlockPool(NUM_BLOCKS, BLOCK_SIZE, HOST_BLOCKS, tmp_path / policy,
                                                            DISK_BLOCKS, policy)
            runs[policy] = run(model, pools[policy])
    finally:
        torch.set_num_threads(threads)

    for policy in ("write_back", "write_through"):
        r, pool = runs[policy], pools[policy]
        observe(f"{policy}: replies identical to the run without a cache", r["replies"] == no_cache["replies"])
        observe(f"{policy}: replies (turn, conversation)", r["replies"])
        observe(f"{policy}: tokens computed per step", r["per_step"])
        observe(f"{policy}: counters", counters(pool))
        observe(f"{policy}: blocks in host, blocks on disk, files",
                [len(pool.host), len(pool.disk), len(list((tmp_path / policy).iterdir()))])
    observe("tokens computed per turn: no cache, write-back, write-through",
            [no_cache["per_turn"], runs["write_back"]["per_turn"], runs["write_through"]["per_turn"]])
    observe("both policies compute fewer tokens than no cache",
            max(sum(r["per_turn"]) for r in runs.values()) < sum(no_cache["per_turn"]))
