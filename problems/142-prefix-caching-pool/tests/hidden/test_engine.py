"""The engine with your pool on a tiny model: the replies must be exactly those of a run without
any cache, and the work done (tokens computed at every step) exactly the reference pool's."""

import random

import torch
from nano_engine import LLMEngine, SamplingParams
from prefix_cache import PrefixCachingBlockPool
from tiny_models import build_model

VOCAB = 512  # the tiny model's vocabulary


def conversation(seed, num_prompts, system_len, follow_ups, duplicates=0):
    rng = random.Random(seed)
    system = [rng.randrange(1, VOCAB) for _ in range(system_len)]
    prompts = [system + [rng.randrange(1, VOCAB) for _ in range(rng.randint(3, 11))]
               for _ in range(num_prompts)]
    prompts += [list(prompts[i]) for i in range(duplicates)]  # the same prompt twice in a batch
    follow = [[rng.randrange(1, VOCAB) for _ in range(rng.randint(4, 9))] for _ in range(follow_ups)]
    return prompts, follow


def run(model, pool, num_blocks, block_size, prompts, follow, max_tokens):
    engine = LLMEngine(model, eos_token_id=None, pool=pool,
                       num_blocks=None if pool is not None else num_blocks, block_size=block_size)
    params = SamplingParams(max_tokens=max_tokens, ignore_eos=True)
    replies = []
    for turn in range(len(follow) + 1):
        out = engine.generate(prompts, params)
        replies.append(out)
        if turn < len(follow):
            prompts = [p + r + follow[turn] for p, r in zip(prompts, out)]
    return {"replies": replies, "per_step": [s["num_tokens"] for s in engine.step_log],
            "cached": [s["num_cached_tokens"] for s in engine.step_log],
            "preempted": sum(s["num_preempted"] for s in engine.step_log)}


def check(observe, label, device, num_blocks, block_size, prompts, follow, max_tokens):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a tiny model: one thread is fastest and steadiest on a busy host
    try:
        model = build_model(seed=0, device=device)
        plain = run(model, None, num_blocks, block_size, prompts, follow, max_tokens)
        pool = PrefixCachingBlockPool(num_blocks, block_size)
        cached = run(model, pool, num_blocks, block_size, prompts, follow, max_tokens)
    finally:
        torch.set_num_threads(threads)
    observe(f"{label}: replies identical to the run without a cache", cached["replies"] == plain["replies"])
    observe(f"{label}: replies (turn, prompt)", cached["replies"])
    observe(f"{label}: tokens computed per step", cached["per_step"])
    observe(f"{label}: tokens found in the cache per step", cached["cached"])
    observe(f"{label}: requests preempted", cached["preempted"])
    observe(f"{label}: fewer tokens computed than without a cache",
            sum(cached["per_step"]) < sum(plain["per_step"]))
    observe(f"{label}: num_queries, num_hits", [pool.num_queries, pool.num_hits])
    observe(f"{label}: every block free at the end", pool.num_free() == num_blocks)


def test_engine_shared_system_prompt(observe, device):
    prompts, follow = conversation(142, num_prompts=5, system_len=24, follow_ups=2)
    check(observe, "40 blocks of 8", device, 40, 8, prompts, follow, max_tokens=10)


def test_engine_small_pool(observe, device):
    """Few blocks: cached prefixes are evicted, and decode steps run out of blocks and preempt."""
    prompts, follow = conversation(7, num_prompts=5, system_len=24, follow_ups=1)
    check(observe, "16 blocks of 8", device, 16, 8, prompts, follow, max_tokens=10)
    prompts, follow = conversation(8, num_prompts=6, system_len=10, follow_ups=2)
    check(observe, "24 blocks of 4", device, 24, 4, prompts, follow, max_tokens=8)


def test_engine_same_prompt_twice_in_a_batch(observe, device):
    """Two copies of a prompt admitted in the same step cannot find each other's blocks: both
    compute it, and only one copy may become the cached one."""
    prompts, follow = conversation(3, num_prompts=3, system_len=16, follow_ups=2, duplicates=2)
    check(observe, "32 blocks of 4", device, 32, 4, prompts, follow, max_tokens=6)
