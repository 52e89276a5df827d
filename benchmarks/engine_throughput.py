"""Generation throughput of the handbook's engine (`LLMEngine.generate`) against transformers'
`Qwen3ForCausalLM.generate` on the same checkpoint and the same batch, measured in the same run;
ratio = engine / transformers (tokens/s).

The batch: 8 prompts of different lengths (5 to 128 tokens), 32 new tokens each, greedy,
ignore_eos. The engine gets all prompts at once (one prefill step, then batched decode steps over
its paged KV cache); transformers gets them left-padded with an attention mask, the pad id a token
that occurs in no prompt and `eos_token_id=None`, so both generate exactly 8 x 32 tokens. Whether
the tokens are identical is printed.

The engine runs twice: with a plain `BlockPool` (no prefix caching, the default) and with a
`PrefixCachingBlockPool` (a fresh one each run, so nothing is reused between runs; what it adds is
the per-step bookkeeping of cached blocks).

Checkpoints (`tiny_models.checkpoint_dir`, written once into .cache/): a mid-size tiny model (hidden
256, 4 layers, 8 heads, Qwen3's vocabulary) and the TINY test shape (vocab 512).

    .venv/bin/python benchmarks/engine_throughput.py [--device cuda] [--quick]

--quick: the TINY model only, 2 new tokens, one run (the script still works; no figure).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
from _common import base_parser, fmt, machine_line, print_table, setup, time_median  # noqa: E402

import reference  # noqa: E402,F401

from mini_llm import Transformer  # noqa: E402
from nano_engine import LLMEngine, SamplingParams  # noqa: E402
from prefix_cache import BlockPool, PrefixCachingBlockPool  # noqa: E402
from tiny_models import QWEN3_VOCAB_SIZE, TINY, checkpoint_dir  # noqa: E402

BLOCK_SIZE = 16
LENGTHS = (5, 17, 30, 46, 64, 81, 100, 128)
MID = dict(vocab_size=QWEN3_VOCAB_SIZE, hidden_size=256, intermediate_size=768, num_hidden_layers=4,
           num_attention_heads=8, num_key_value_heads=4, head_dim=32)
REGULAR_TOKENS = 151_643  # ids below are ordinary tokens in Qwen3's vocabulary


def make_prompts(vocab: int, seed: int = 0) -> tuple[list[list[int]], int]:
    """The batch's prompts and a pad id that none of them contains."""
    gen = torch.Generator().manual_seed(seed)
    # Ids from 1 up: id 0 is kept out of the prompts so that it can serve as the pad id.
    hi = min(vocab, REGULAR_TOKENS)
    prompts = [torch.randint(1, hi, (n,), generator=gen).tolist() for n in LENGTHS]
    used = {t for p in prompts for t in p}
    pad = next(t for t in range(vocab) if t not in used)
    return prompts, pad


def run(label: str, shape: dict, device, reps: int, max_tokens: int) -> list[list]:
    import transformers

    path = checkpoint_dir(seed=0, **shape)
    prompts, pad = make_prompts(shape["vocab_size"])
    n_generated = len(prompts) * max_tokens
    params = SamplingParams(max_tokens=max_tokens, ignore_eos=True)
    num_blocks = sum(-(-(len(p) + max_tokens) // BLOCK_SIZE) for p in prompts) + 4

    ours = Transformer.from_pretrained(path, device=device)
    engines = {}

    def engine_run(pool_cls):
        def setup_fn():
            # the handbook's plain pool knows only its size; the prefix cache also hashes
            # whole blocks, so it needs their size
            pool = pool_cls(num_blocks) if pool_cls is BlockPool else \
                pool_cls(num_blocks, BLOCK_SIZE)
            engines[pool_cls] = LLMEngine(ours, pool=pool, block_size=BLOCK_SIZE)

        def fn():
            engines["out", pool_cls] = engines[pool_cls].generate(prompts, params)
        return time_median(fn, device, reps, warmup=1, setup_fn=setup_fn)

    t_engine = engine_run(BlockPool)
    t_engine_pc = engine_run(PrefixCachingBlockPool)
    got = engines["out", BlockPool]
    got_pc = engines["out", PrefixCachingBlockPool]
    # freed before the baseline loads; rebound rather than deleted, as engine_run's closures
    # name them
    ours = engines = None

    hf = transformers.Qwen3ForCausalLM.from_pretrained(path, dtype=torch.float32).to(device).eval()
    width = max(map(len, prompts))
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=device)
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
    out = {}

    def hf_generate():
        with torch.inference_mode():
            out["ids"] = hf.generate(input_ids=ids, attention_mask=mask, max_new_tokens=max_tokens,
                                     do_sample=False, pad_token_id=pad,
                                     eos_token_id=None)

    t_hf = time_median(hf_generate, device, reps, warmup=1)
    expected = out["ids"][:, width:].tolist()
    hf = None  # freed; rebound rather than deleted, as hf_generate names it

    hf_tps = n_generated / t_hf
    rows = [[label, "transformers generate", fmt(t_hf * 1e3), fmt(hf_tps), "1", "(baseline)"]]
    for name, t, tokens in (("engine, BlockPool", t_engine, got),
                            ("engine, PrefixCachingBlockPool", t_engine_pc, got_pc)):
        tps = n_generated / t
        rows.append([label, name, fmt(t * 1e3), fmt(tps), fmt(tps / hf_tps),
                     "identical" if tokens == expected else
                     f"DIFFER in {sum(a != b for a, b in zip(tokens, expected))} of {len(prompts)} rows"])
    return rows


def main() -> None:
    p = base_parser(__doc__.split("\n\n")[0])
    p.set_defaults(reps=3)
    p.add_argument("--max-tokens", type=int, default=32)
    args = p.parse_args()
    device = setup(args)
    if args.quick:
        args.max_tokens = 2
    import transformers

    print(machine_line(device) + f"; transformers {transformers.__version__}")
    print(f"batch of {len(LENGTHS)} prompts, lengths {list(LENGTHS)}, {args.max_tokens} new tokens each, "
          f"greedy, ignore_eos; median of >= {args.reps} runs (>= 1 s of runs)")
    rows = []
    if not args.quick:
        rows += run("mid (h256, 4 layers, 151936 vocab)", MID, device, args.reps,
                    args.max_tokens)
    rows += run("TINY (h64, 2 layers, 512 vocab)", TINY, device, args.reps, args.max_tokens)
    print_table(["model", "generator", "ms / batch", "new tokens/s", "ratio vs transformers",
                 "tokens vs transformers"], rows)


if __name__ == "__main__":
    main()
