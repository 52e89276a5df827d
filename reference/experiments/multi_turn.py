"""The chapter's experiment: multi-turn chats on a small GPU pool, with and without a host tier.

Six conversations (one per city), three turns each; all conversations of a turn are generated
together on a pool of 24 blocks of 16 tokens, 20 new tokens per reply. Three runs over the same
conversations:

  no_cache  a plain block pool: every prompt token is computed every turn;
  gpu       prefix caching in GPU blocks only: earlier turns are found again while their blocks
            survive, but 24 blocks cannot hold six growing conversations;
  tiered    GPU blocks plus a host tier of 200 blocks: blocks are copied out before reuse and
            copied back on a hit.

All three must produce the same tokens; the tokens computed must fall from run to run.

    .venv/bin/python -m reference.experiments.multi_turn [--model DIR] [--tiered FILE] [--json] [--device cuda]

Without `--model` a tiny seeded Qwen3 with the real vocabulary is used (its replies are noise, but
the cache behaves exactly as it would with a real model). With a real checkpoint folder, e.g.
Qwen3-0.6B put in `models/Qwen3-0.6B`, it runs unchanged and replies stop at `<|im_end|>`.
`--tiered FILE` runs the third run with the `TieredPrefixCachingBlockPool` from FILE (your own
solution to problem 143; it runs in this process, unsandboxed, like any script of yours).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys

import reference  # noqa: F401  (puts the handbook's flat modules on sys.path)

CITIES = ["Paris", "Tokyo", "Cairo", "Lima", "Oslo", "Sydney"]
FOLLOW_UPS = ["What is it best known for?", "When is the best time to visit?"]
SYSTEM = "You are a concise travel guide."
NUM_BLOCKS, BLOCK_SIZE, HOST_BLOCKS, MAX_TOKENS = 24, 16, 200, 20


def load_tiered_class(path: str | None):
    if path is None:
        from tiered import TieredPrefixCachingBlockPool
        return TieredPrefixCachingBlockPool
    spec = importlib.util.spec_from_file_location("student_tiered", path)
    if spec is None:
        raise SystemExit(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        return module.TieredPrefixCachingBlockPool
    except AttributeError:
        raise SystemExit(f"{path}: defines no TieredPrefixCachingBlockPool") from None


def run_conversations(model, tokenizer, pool, *, ignore_eos: bool) -> dict:
    """Run the three turns of all six conversations through one engine; return tokens and costs."""
    from nano_engine import LLMEngine, SamplingParams
    from qwen3_tokenizer import common_prefix_len

    engine = LLMEngine(model, eos_token_id=tokenizer.eos_token_id, pool=pool,
                       num_blocks=None if pool is not None else NUM_BLOCKS, block_size=BLOCK_SIZE)
    if hasattr(pool, "kv"):
        pool.kv = engine.kv
    params = SamplingParams(max_tokens=MAX_TOKENS, ignore_eos=ignore_eos)
    chats = [[{"role": "system", "content": SYSTEM},
              {"role": "user", "content": f"Introduce {city} in two sentences."}] for city in CITIES]
    outputs, computed_per_turn, reuse = [], [], []
    for turn in range(1 + len(FOLLOW_UPS)):
        prompts = [tokenizer.encode_chat(chat, add_generation_prompt=True, enable_thinking=False)
                   for chat in chats]
        if turn > 0:  # how much of the previous turn's context the new prompt repeats verbatim
            reuse.append([common_prefix_len(prev, p) for prev, p in zip(contexts, prompts)])
        before = engine.num_computed_tokens
        replies = engine.generate(prompts, params)
        computed_per_turn.append(engine.num_computed_tokens - before)
        outputs.append(replies)
        contexts = [p + r for p, r in zip(prompts, replies)]
        for chat, reply in zip(chats, replies):
            chat.append({"role": "assistant", "content": tokenizer.decode(reply)})
            if turn < len(FOLLOW_UPS):
                chat.append({"role": "user", "content": FOLLOW_UPS[turn]})
    return {"outputs": outputs, "computed": engine.num_computed_tokens,
            "computed_per_turn": computed_per_turn, "reuse": reuse, "prompt_lens": [len(c) for c in contexts],
            "offloaded": getattr(pool, "num_offloaded", 0), "loaded": getattr(pool, "num_loaded", 0),
            "hits": getattr(pool, "num_hits", 0), "queries": getattr(pool, "num_queries", 0)}


def run_experiment(model=None, tokenizer=None, tiered_cls=None, *, ignore_eos: bool = True,
                   device: str = "cpu") -> dict:
    from prefix_cache import PrefixCachingBlockPool

    if tokenizer is None:
        from qwen3_tokenizer import load_tokenizer
        tokenizer = load_tokenizer()
    if model is None:
        from tiny_models import QWEN3_VOCAB_SIZE, build_model
        model = build_model(seed=0, vocab_size=QWEN3_VOCAB_SIZE, device=device)
    if tiered_cls is None:
        tiered_cls = load_tiered_class(None)
    runs = {
        "no_cache": run_conversations(model, tokenizer, None, ignore_eos=ignore_eos),
        "gpu": run_conversations(model, tokenizer, PrefixCachingBlockPool(NUM_BLOCKS, BLOCK_SIZE),
                                 ignore_eos=ignore_eos),
        "tiered": run_conversations(model, tokenizer, tiered_cls(NUM_BLOCKS, BLOCK_SIZE, HOST_BLOCKS),
                                    ignore_eos=ignore_eos),
    }
    identical = runs["no_cache"]["outputs"] == runs["gpu"]["outputs"] == runs["tiered"]["outputs"]
    return {"runs": runs, "identical": identical,
            "summary": {"computed": {name: r["computed"] for name, r in runs.items()},
                        "identical": identical,
                        "offloaded": runs["tiered"]["offloaded"], "loaded": runs["tiered"]["loaded"]}}


def format_table(result: dict) -> str:
    runs = result["runs"]
    base = runs["no_cache"]["computed"]
    lines = [f"{len(CITIES)} conversations x {1 + len(FOLLOW_UPS)} turns, {NUM_BLOCKS} GPU blocks of "
             f"{BLOCK_SIZE} tokens, host tier {HOST_BLOCKS} blocks, {MAX_TOKENS} new tokens per reply",
             "",
             f"{'run':<10}{'computed':>10}{'vs none':>9}{'per turn':>20}{'hit tokens':>12}"
             f"{'offloaded':>11}{'loaded':>8}"]
    for name, r in runs.items():
        per_turn = "/".join(str(n) for n in r["computed_per_turn"])
        hits = f"{r['hits']}/{r['queries']}" if r["queries"] else "-"
        lines.append(f"{name:<10}{r['computed']:>10}{r['computed'] / base:>9.2f}{per_turn:>20}{hits:>12}"
                     f"{r['offloaded']:>11}{r['loaded']:>8}")
    lines.append("")
    lines.append("outputs identical in all three runs: " + ("yes" if result["identical"] else "NO"))
    reuse = runs["no_cache"]["reuse"]
    if reuse:
        r = reuse[0][0]
        lines.append(f"the template re-renders the previous reply without its empty think block, so turn 2's "
                     f"prompt repeats only the first {r} tokens of turn 1's context (conversation 1): "
                     f"the reply's own KV is never reused, only the prompt's.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a Qwen3 checkpoint folder (default: a tiny generated model)")
    parser.add_argument("--tiered", metavar="FILE", help="a file defining TieredPrefixCachingBlockPool")
    parser.add_argument("--json", action="store_true", help="print one JSON line with the figures")
    parser.add_argument("--device", default="cpu", help="where the model and the KV cache live "
                        "(cpu, cuda); the host tier is always CPU memory")
    args = parser.parse_args(argv)

    model = None
    if args.model:
        from mini_llm import CheckpointError, Transformer
        try:
            model = Transformer.from_pretrained(args.model, device=args.device)
        except (CheckpointError, OSError) as e:
            print(f"cannot load the model: {e}", file=sys.stderr)
            return 2
    result = run_experiment(model, tiered_cls=load_tiered_class(args.tiered), ignore_eos=args.model is None,
                            device=args.device)
    if args.json:
        print(json.dumps(result["summary"]))
    else:
        print(format_table(result))
    return 0 if result["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
