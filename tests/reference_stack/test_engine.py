"""The engine: same tokens as transformers' generate, through batching, caching and preemption."""

import pytest
import torch

import reference  # noqa: F401

from mini_llm import Transformer
from nano_engine import LLMEngine, SamplingParams
from prefix_cache import PrefixCachingBlockPool
from tiered import TieredPrefixCachingBlockPool
from tiny_models import build_model, checkpoint_dir

transformers = pytest.importorskip("transformers")

LENGTHS = (3, 16, 21, 40)


def prompts(seed=0, lengths=LENGTHS, vocab=512):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randint(0, vocab, (n,), generator=gen).tolist() for n in lengths]


def test_greedy_tokens_equal_transformers_generate(tmp_path):
    path = checkpoint_dir(seed=4, cache=str(tmp_path))
    ours = Transformer.from_pretrained(path)
    hf = transformers.Qwen3ForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    batch = prompts(1)
    got = LLMEngine(ours, num_blocks=32).generate(batch, SamplingParams(max_tokens=12, ignore_eos=True))

    # Left-padded batch with an explicit attention mask; the pad id is never a real token here.
    width = max(map(len, batch))
    pad = 0
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in batch])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in batch])
    with torch.no_grad():
        out = hf.generate(input_ids=ids, attention_mask=mask, max_new_tokens=12, do_sample=False,
                          pad_token_id=pad, eos_token_id=None)
    expected = out[:, width:].tolist()
    assert got == expected


def test_prefix_cache_and_preemption_do_not_change_tokens():
    model = build_model(seed=2)
    shared = prompts(7, (37,))[0]
    batch = [shared + p for p in prompts(8, (5, 9, 20, 2, 30, 11))]
    params = SamplingParams(max_tokens=24, ignore_eos=True)
    roomy = LLMEngine(model, num_blocks=64)
    expected = roomy.generate(batch, params)
    assert all(s["num_preempted"] == 0 for s in roomy.step_log)

    for pool in (None, PrefixCachingBlockPool(14, 16), TieredPrefixCachingBlockPool(14, 16, 32)):
        engine = LLMEngine(model, pool=pool, num_blocks=14 if pool is None else None)
        if pool is not None:
            pool.kv = engine.kv
        assert engine.generate(batch, params) == expected
        assert sum(s["num_preempted"] for s in engine.step_log) > 0, "the small pool should preempt"
        assert engine.pool.num_free() == 14, "every block is returned at the end"
        if pool is not None:
            assert sum(s["num_cached_tokens"] for s in engine.step_log) > 0


def test_step_log_accounts_for_every_token():
    model = build_model(seed=1)
    batch = prompts(3, (10, 33))
    engine = LLMEngine(model, pool=PrefixCachingBlockPool(16, 16))
    engine.generate(batch, SamplingParams(max_tokens=5, ignore_eos=True))
    engine.generate(batch, SamplingParams(max_tokens=5, ignore_eos=True))  # same prompts: cached
    log = engine.step_log
    assert {"num_tokens", "num_prefill_tokens", "num_decode_tokens", "num_cached_tokens",
            "free_blocks", "num_preempted", "kind"} <= set(log[0])
    for s in log:
        assert s["num_tokens"] == s["num_prefill_tokens"] + s["num_decode_tokens"]
    first, second = [s for s in log if s["kind"] == "prefill"]
    assert first["num_tokens"] == 43 and first["num_cached_tokens"] == 0
    # 10 tokens: nothing full to reuse; 33 tokens: 2 full blocks of the first 32 (the last is computed)
    assert second["num_cached_tokens"] == 32 and second["num_tokens"] == 43 - 32
    assert sum(s["num_decode_tokens"] for s in log) == 2 * 2 * 4


def test_eos_stops_a_request_and_sampling_is_seeded():
    model = build_model(seed=0)
    p = prompts(5, (8,))
    free_run = LLMEngine(model).generate(p, SamplingParams(max_tokens=10, ignore_eos=True))[0]
    eos = free_run[3]
    stopped = LLMEngine(model, eos_token_id=eos).generate(p, SamplingParams(max_tokens=10))[0]
    assert stopped == free_run[: free_run.index(eos) + 1]
    sample = SamplingParams(max_tokens=10, temperature=1.0, seed=123, ignore_eos=True)
    a = LLMEngine(model).generate(p, sample)
    b = LLMEngine(model).generate(p, sample)
    assert a == b


def test_request_larger_than_the_pool_is_refused():
    with pytest.raises(ValueError, match="needs .* blocks"):
        LLMEngine(build_model(seed=0), num_blocks=2).generate(prompts(0, (40,)), SamplingParams(max_tokens=1))
