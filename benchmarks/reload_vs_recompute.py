"""Reload or recompute? Per-token cost of computing a prefix's KV again (a prefill) against copying it
back from the host tier (`TieredPrefixCachingBlockPool._load`), measured, next to the chapter's
back-of-envelope estimate:

    recompute per token ~ 2 x params FLOPs / matmul FLOP/s      (params: the decoder layers')
    reload per token    ~ KV bytes per token / copy bandwidth   (2 x layers x kv_heads x head_dim x bytes)

Both FLOP/s and bandwidth are measured on this machine in the same run (a 2048^3 matmul; one large
contiguous copy in the reload direction: host to host on CPU, pinned host to device on CUDA).

Models: the tiny test model (TINY shape with Qwen3's vocabulary) and a random model of Qwen3-0.6B's
shape built in memory (~600M parameters; 2.4 GB in fp32).

    .venv/bin/python benchmarks/reload_vs_recompute.py [--device cuda] [--models tiny,0.6b]
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
from _common import (  # noqa: E402
    DTYPES,
    QWEN3_0_6B,
    base_parser,
    build_random_model,
    fmt,
    kv_bytes_per_token,
    machine_line,
    param_counts,
    pool_copy_seconds,
    print_table,
    setup,
    sync,
    time_median,
)

import reference  # noqa: E402,F401

from kv_cache import AttentionMetadata  # noqa: E402
from tiny_models import QWEN3_VOCAB_SIZE, build_model  # noqa: E402

BLOCK_SIZE = 16


def matmul_flops(device, dtype, reps: int, n: int = 2048) -> float:
    a = torch.randn(n, n, device=device).to(dtype)
    b = torch.randn(n, n, device=device).to(dtype)
    t = time_median(lambda: a @ b, device, reps)
    return 2 * n ** 3 / t


def copy_bandwidth(device, dtype, reps: int, nbytes: int = 256 << 20) -> tuple[float, float]:
    """(reload direction, offload direction) bytes/s of one large contiguous copy of `dtype`."""
    dev = torch.device(device)
    numel = nbytes // torch.empty((), dtype=dtype).element_size()
    src = torch.full((numel,), 0.5, dtype=dtype, device=dev)
    if dev.type == "cuda":
        host = torch.full((numel,), 0.5, dtype=dtype, pin_memory=True)
        t_load = time_median(lambda: src.copy_(host, non_blocking=True), dev, reps)
        t_off = time_median(lambda: host.copy_(src, non_blocking=True), dev, reps)
    else:
        dst = torch.full((numel,), 0.5, dtype=dtype)
        t_load = t_off = time_median(lambda: dst.copy_(src), dev, reps)
    return nbytes / t_load, nbytes / t_off


@torch.inference_mode()
def prefill_seconds(model, device, num_tokens: int, reps: int) -> float:
    """Median seconds of one paged prefill of `num_tokens` tokens (KV written into the cache; the
    output layer is not run: recomputing KV does not need logits)."""
    blocks = -(-num_tokens // BLOCK_SIZE)
    kv = model.new_kv_cache(blocks, BLOCK_SIZE)
    meta = AttentionMetadata.build([num_tokens], [num_tokens], [list(range(blocks))], BLOCK_SIZE, device)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (num_tokens,), generator=gen).to(device)
    positions = torch.arange(num_tokens, device=device)
    return time_median(lambda: model(ids, positions, kv, meta), device, reps)


@torch.inference_mode()
def model_pool_copy_seconds(model, device, num_blocks: int, reps: int) -> tuple[float, float]:
    kv = model.new_kv_cache(num_blocks, BLOCK_SIZE)
    for t in kv.k + kv.v:
        t.fill_(0.5)  # touch every page: a never-written cache reads as shared zero pages on CPU
    return pool_copy_seconds(kv, device, reps)


def main() -> None:
    p = base_parser(__doc__.split("\n\n")[0])
    p.set_defaults(reps=3)
    p.add_argument("--dtype", default="float32", choices=sorted(DTYPES))
    p.add_argument("--models", default="tiny,0.6b", help="comma-separated: tiny, 0.6b")
    p.add_argument("--prefill-tokens", type=int, default=256)
    p.add_argument("--tiny-blocks", type=int, default=2048, help="blocks copied for the tiny model")
    p.add_argument("--big-blocks", type=int, default=128, help="blocks copied for the 0.6B shape")
    args = p.parse_args()
    device = setup(args)
    matmul_n, copy_bytes = 2048, 256 << 20
    if args.quick:  # the script still works; no figure means anything
        args.models, args.prefill_tokens, args.tiny_blocks = "tiny", 32, 8
        matmul_n, copy_bytes = 128, 1 << 20
    dtype = DTYPES[args.dtype]
    print(machine_line(device))
    print(f"dtype {args.dtype}, block_size {BLOCK_SIZE}, prefill of {args.prefill_tokens} tokens, "
          f"median of >= {args.reps} runs (cheap calls: >= 1 s of runs)")

    flops = matmul_flops(device, dtype, max(args.reps, 3), n=matmul_n)
    bw_load, bw_off = copy_bandwidth(device, dtype, max(args.reps, 3), nbytes=copy_bytes)
    print(f"machine: matmul {fmt(flops / 1e9)} GFLOP/s (2048^3, {args.dtype}); contiguous copy "
          f"{fmt(bw_load / 1e9)} GB/s reload direction, {fmt(bw_off / 1e9)} GB/s offload direction "
          f"(256 MiB of {args.dtype})")

    rows, est_rows = [], []
    for name in [m.strip() for m in args.models.split(",") if m.strip()]:
        if name == "tiny":
            label = "tiny (TINY, 151936 vocab)"
            model = build_model(seed=0, vocab_size=QWEN3_VOCAB_SIZE, device=device, dtype=dtype)
            num_blocks = args.tiny_blocks
        elif name == "0.6b":
            label = "Qwen3-0.6B shape (random)"
            model = build_random_model(QWEN3_0_6B, device, dtype)
            num_blocks = args.big_blocks
        else:
            raise SystemExit(f"unknown model {name!r}; use tiny and/or 0.6b")
        model.requires_grad_(False)
        cfg = model.config
        total, layer_params = param_counts(model)
        kv_tok = kv_bytes_per_token(cfg, torch.empty((), dtype=dtype).element_size())

        t_prefill = prefill_seconds(model, device, args.prefill_tokens, args.reps)
        t_off, t_load = model_pool_copy_seconds(model, device, num_blocks, args.reps)
        sync(device)
        n_copied = num_blocks * BLOCK_SIZE
        recompute_us = t_prefill / args.prefill_tokens * 1e6
        load_us = t_load / n_copied * 1e6
        off_us = t_off / n_copied * 1e6
        est_recompute_us = 2 * layer_params / flops * 1e6
        est_load_us = kv_tok / bw_load * 1e6
        rows.append([label, fmt(recompute_us), fmt(load_us), fmt(off_us),
                     fmt(recompute_us / load_us), f"{num_blocks} blk"])
        est_rows.append([label, f"{total / 1e6:.1f}M / {layer_params / 1e6:.1f}M", f"{kv_tok:,}",
                         fmt(est_recompute_us), fmt(est_load_us), fmt(est_recompute_us / est_load_us),
                         fmt(recompute_us / est_recompute_us), fmt(load_us / est_load_us)])
        del model

    print_table(["model", "recompute us/tok", "reload us/tok", "offload us/tok",
                 "recompute/reload", "copied"], rows,
                title="Measured (recompute: paged prefill through the decoder, no output layer; "
                      "reload/offload: TieredPrefixCachingBlockPool._load/_offload)")
    print_table(["model", "params all / layers", "KV B/tok", "est recompute us/tok",
                 "est reload us/tok", "est ratio", "measured/est recompute", "measured/est reload"],
                est_rows,
                title="Back-of-envelope (2 x layer params / matmul FLOP/s; KV bytes / copy bandwidth)")


if __name__ == "__main__":
    main()
