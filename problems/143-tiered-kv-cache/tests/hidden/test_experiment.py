"""(f) The chapter's experiment on a tiny model: six conversations, three turns each, all
conversations of a turn generated together on a GPU pool of 24 blocks of 16 tokens, with a host
tier of 200 blocks. The replies must be exactly those of a run without any cache, and the work
done (tokens computed per step) exactly the reference's."""

import random

import torch
from nano_engine import LLMEngine, SamplingParams
from prefix_cache import PrefixCachingBlockPool
from tiered import TieredPrefixCachingBlockPool
from tiny_models import build_model

NUM_BLOCKS, BLOCK_SIZE, HOST_BLOCKS, MAX_TOKENS = 24, 16, 200, 20
NUM_CONVERSATIONS, NUM_TURNS = 6, 3


def conversation_pieces():
    """Synthetic token ids (the tiny model's vocabulary has 512): a shared "system prompt", one
    question per city and the follow-up questions."""
    rng = random.Random(143)
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


def test_chapter_experiment(observe, device):
    # The model is tiny: one CPU thread is fastest, and several threads spin badly on a busy machine.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = build_model(seed=0, device=device)
        no_cache = run(model, None)
        gpu_only = run(model, PrefixCachingBlockPool(NUM_BLOCKS, BLOCK_SIZE))
        pool = TieredPrefixCachingBlockPool(NUM_BLOCKS, BLOCK_SIZE, HOST_BLOCKS)
        tiered = run(model, pool)
    finally:
        torch.set_num_threads(threads)

    observe("replies identical to the run without a cache", tiered["replies"] == no_cache["replies"])
    observe("replies of the tiered run (turn, conversation)", tiered["replies"])
    observe("tokens computed per turn: no cache, GPU only, tiered",
            [no_cache["per_turn"], gpu_only["per_turn"], tiered["per_turn"]])
    observe("tokens computed per step (tiered run)", tiered["per_step"])
    observe("tiered computes fewer tokens than GPU only, which computes fewer than no cache",
            sum(tiered["per_turn"]) < sum(gpu_only["per_turn"]) < sum(no_cache["per_turn"]))
    observe("num_offloaded, num_loaded, num_hits, num_queries",
            [pool.num_offloaded, pool.num_loaded, pool.num_hits, pool.num_queries])
    observe("blocks in host memory at the end", len(pool.host))
    observe("host copies live in CPU memory",
            all(t.device.type == "cpu" for entry in pool.host.values() for kv in entry for t in kv))
