"""The chapter's experiment: multi-turn chats on a small GPU pool, with and without lower tiers.

Six conversations (one per city), three turns each; all conversations of a turn are generated
together on a pool of 24 blocks of 16 tokens, 20 new tokens per reply. Four runs over the same
conversations:

  no_cache  a plain block pool: every prompt token is computed every turn;
  gpu       prefix caching in GPU blocks only: earlier turns are found again while their blocks
            survive, but 24 blocks cannot hold six growing conversations;
  tiered    GPU blocks plus a host tier of 200 blocks: blocks are copied out before reuse and
            copied back on a hit (problem 143);
  disk      GPU blocks, a host tier of only 8 blocks, too small for the history, and a disk tier
            of 200 block files (in a temporary folder) that holds it, write-back (problem 144).

All four must produce the same tokens; the tokens computed must fall from no_cache to gpu to
tiered, and the disk run must compute fewer than gpu.

    .venv/bin/python -m reference.experiments.multi_turn [--model DIR] [--tiered FILE]
        [--three-tier FILE] [--json] [--device cuda]

Without `--model` a tiny seeded Qwen3 with the real vocabulary is used (its replies are noise, but
the cache behaves exactly as it would with a real model). With a real checkpoint folder, e.g.
Qwen3-0.6B put in `models/Qwen3-0.6B`, it runs unchanged and replies stop at `<|im_end|>`.
`--tiered FILE` runs the third run with the `TieredPrefixCachingBlockPool` from FILE (your own
solution to problem 143; it runs in this process, unsandboxed, like any script of yours), and
`--three-tier FILE` the fourth with the `ThreeTierPrefixCachingBlockPool` from FILE (problem 144).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
import tempfile

import reference  # noqa: F401  (puts the handbook's flat modules on sys.path)

CITIES = ["Paris", "Tokyo", "Cairo", "Lima", "Oslo", "Sydney"]
FOLLOW_UPS = ["What is it best known for?", "When is the best time to visit?"]
SYSTEM = "You are a concise travel guide."
NUM_BLOCKS, BLOCK_SIZE, HOST_BLOCKS, MAX_TOKENS = 24, 16, 200, 20
# The disk run: a host tier that cannot hold the history, a disk tier that can.
SMALL_HOST_BLOCKS, DISK_BLOCKS = 8, 200


def _load_class(path: str | None, module_name: str, class_name: str):
    if path is None:
        return getattr(importlib.import_module(module_name), class_name)
    spec = importlib.util.spec_from_file_location(f"student_{module_name}", path)
    if spec is None:
        raise SystemExit(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        return getattr(module, class_name)
    except AttributeError:
        raise SystemExit(f"{path}: defines no {class_name}") from None


def load_tiered_class(path: str | None):
    return _load_class(path, "tiered", "TieredPrefixCachingBlockPool")


def load_three_tier_class(path: str | None):
    return _load_class(path, "three_tier", "ThreeTierPrefixCachingBlockPool")


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
    contexts: list[list[int]] = []  # each chat's tokens so far: the last prompt and its reply
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
    disk = hasattr(pool, "disk")
    return {"outputs": outputs, "computed": engine.num_computed_tokens,
            "computed_per_turn": computed_per_turn, "reuse": reuse,
            "prompt_lens": [len(c) for c in contexts],
            # GPU -> host and host -> GPU copies: problem 143's names, or problem 144's.
            "offloaded": getattr(pool, "num_host_writes" if disk else "num_offloaded", 0),
            "loaded": getattr(pool, "num_loaded_from_host" if disk else "num_loaded", 0),
            "disk_writes": getattr(pool, "num_disk_writes", 0) if disk else None,
            "loaded_from_disk": getattr(pool, "num_loaded_from_disk", 0) if disk else None,
            "hits": getattr(pool, "num_hits", 0), "queries": getattr(pool, "num_queries", 0)}


def run_experiment(model=None, tokenizer=None, tiered_cls=None, three_tier_cls=None, *,
                   ignore_eos: bool = True, device: str = "cpu") -> dict:
    from prefix_cache import PrefixCachingBlockPool

    if tokenizer is None:
        from qwen3_tokenizer import load_tokenizer
        tokenizer = load_tokenizer()
    if model is None:
        from tiny_models import QWEN3_VOCAB_SIZE, build_model
        model = build_model(seed=0, vocab_size=QWEN3_VOCAB_SIZE, device=device)
    if tiered_cls is None:
        tiered_cls = load_tiered_class(None)
    if three_tier_cls is None:
        three_tier_cls = load_three_tier_class(None)
    runs = {
        "no_cache": run_conversations(model, tokenizer, None, ignore_eos=ignore_eos),
        "gpu": run_conversations(model, tokenizer, PrefixCachingBlockPool(NUM_BLOCKS, BLOCK_SIZE),
                                 ignore_eos=ignore_eos),
        "tiered": run_conversations(model, tokenizer, tiered_cls(NUM_BLOCKS, BLOCK_SIZE, HOST_BLOCKS),
                                    ignore_eos=ignore_eos),
    }
    with tempfile.TemporaryDirectory(prefix="kv-disk-tier-") as disk_dir:
        pool = three_tier_cls(NUM_BLOCKS, BLOCK_SIZE, SMALL_HOST_BLOCKS, disk_dir, DISK_BLOCKS)
        runs["disk"] = run_conversations(model, tokenizer, pool, ignore_eos=ignore_eos)
    identical = all(r["outputs"] == runs["no_cache"]["outputs"] for r in runs.values())
    disk = runs["disk"]
    return {"runs": runs, "identical": identical,
            "summary": {"computed": {name: r["computed"] for name, r in runs.items()},
                        "identical": identical,
                        "offloaded": runs["tiered"]["offloaded"], "loaded": runs["tiered"]["loaded"],
                        "disk": {"host_writes": disk["offloaded"], "disk_writes": disk["disk_writes"],
                                 "loaded_from_host": disk["loaded"],
                                 "loaded_from_disk": disk["loaded_from_disk"]}}}


def format_table(result: dict) -> str:
    runs = result["runs"]
    base = runs["no_cache"]["computed"]
    lines = [f"{len(CITIES)} conversations x {1 + len(FOLLOW_UPS)} turns, {NUM_BLOCKS} GPU blocks of "
             f"{BLOCK_SIZE} tokens, {MAX_TOKENS} new tokens per reply",
             f"tiered: host tier {HOST_BLOCKS} blocks; disk: host tier {SMALL_HOST_BLOCKS} + disk tier "
             f"{DISK_BLOCKS} blocks, write-back",
             "offloaded, loaded: blocks copied GPU -> host, host -> GPU; to disk, from disk: blocks written, read",
             "",
             f"{'run':<10}{'computed':>10}{'vs none':>9}{'per turn':>20}{'hit tokens':>12}"
             f"{'offloaded':>11}{'loaded':>8}{'to disk':>9}{'from disk':>11}"]
    for name, r in runs.items():
        per_turn = "/".join(str(n) for n in r["computed_per_turn"])
        hits = f"{r['hits']}/{r['queries']}" if r["queries"] else "-"
        to_disk = "-" if r.get("disk_writes") is None else r["disk_writes"]
        from_disk = "-" if r.get("loaded_from_disk") is None else r["loaded_from_disk"]
        lines.append(f"{name:<10}{r['computed']:>10}{r['computed'] / base:>9.2f}{per_turn:>20}{hits:>12}"
                     f"{r['offloaded']:>11}{r['loaded']:>8}{to_disk:>9}{from_disk:>11}")
    lines.append("")
    lines.append("outputs identical in all four runs: " + ("yes" if result["identical"] else "NO"))
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
    parser.add_argument("--three-tier", metavar="FILE",
                        help="a file defining ThreeTierPrefixCachingBlockPool (the disk run)")
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
    result = run_experiment(model, tiered_cls=load_tiered_class(args.tiered),
                            three_tier_cls=load_three_tier_class(args.three_tier),
                            ignore_eos=args.model is None, device=args.device)
    if args.json:
        print(json.dumps(result["summary"]))
    else:
        print(format_table(result))
    return 0 if result["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
