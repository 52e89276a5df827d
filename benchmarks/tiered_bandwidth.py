"""Copy bandwidth of the tiered pool's offload and load (`TieredPrefixCachingBlockPool._offload` /
`_load`, the pool's own methods) against a plain torch copy of the same bytes in one contiguous
tensor, measured in the same run; ratio = pool / plain.

The pool copies one block as 2 x layers small tensors (each `[block_size, kv_heads, head_dim]`),
and offload allocates a fresh host tensor for each. A third line, the same small copies in a plain
loop into preallocated host tensors (no pool, no allocation), separates copy granularity from the
pool's allocation and bookkeeping. The per-copy overhead is (pool time - plain time) / copies.

KV caches: Qwen3-0.6B's shape (28 layers, 8 KV heads, head_dim 128: 64 KiB per copy, 3.5 MiB per
block of 16 tokens in fp32) and the TINY test shape (2 layers, 2 KV heads, head_dim 16: 2 KiB per
copy), where per-copy overhead dominates. On CUDA the KV cache lives on the GPU and the host copies
in pinned memory (as in tiered.py); on CPU both are host memory.

    .venv/bin/python benchmarks/tiered_bandwidth.py [--device cuda] [--blocks 256]
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
    fmt,
    machine_line,
    pool_copy_seconds,
    print_table,
    setup,
    time_median,
)

import reference  # noqa: E402,F401

from kv_cache import KVCache  # noqa: E402
from tiny_models import TINY  # noqa: E402

BLOCK_SIZE = 16


def host_empty(shape, dtype, device):
    return torch.empty(shape, dtype=dtype, pin_memory=torch.device(device).type == "cuda")


def measure(shape: dict, num_blocks: int, dtype, device, reps: int) -> list[list]:
    layers, kv_heads, head_dim = shape["num_hidden_layers"], shape["num_key_value_heads"], shape["head_dim"]
    kv = KVCache(layers, num_blocks, BLOCK_SIZE, kv_heads, head_dim, dtype=dtype, device=device)
    for t in kv.k + kv.v:
        t.fill_(0.5)  # touch every page: untouched zero pages would make CPU reads look free
    nbytes = kv.bytes_per_block() * num_blocks
    copies = 2 * layers * num_blocks
    piece = kv.k[0][0]

    # Plain: the same bytes as one contiguous tensor, copied in one call each way.
    dev_flat = torch.full((nbytes // piece.element_size(),), 0.5, dtype=dtype, device=device)
    host_flat = host_empty(dev_flat.shape, dtype, device)
    host_flat.fill_(0.5)
    non_blocking = torch.device(device).type == "cuda"
    t_plain_off = time_median(lambda: host_flat.copy_(dev_flat, non_blocking=non_blocking), device, reps)
    t_plain_load = time_median(lambda: dev_flat.copy_(host_flat, non_blocking=non_blocking), device, reps)
    # freed for the next measurement; rebound rather than deleted, as the lambdas close over them
    dev_flat = host_flat = None

    # The pool's per-(layer, block) copies in a bare loop, into preallocated host tensors.
    host_pieces = [[(host_empty(piece.shape, dtype, device), host_empty(piece.shape, dtype, device))
                    for _ in range(layers)] for _ in range(num_blocks)]
    for blk in host_pieces:
        for k, v in blk:
            k.fill_(0.5)
            v.fill_(0.5)

    # Written out per device so the loop makes exactly the calls `_to_host`/`_copy_into` make
    # (keyword parsing alone costs a measurable fraction of a microsecond per call).
    if non_blocking:
        def loop_off():
            for b, blk in enumerate(host_pieces):
                for layer, (k, v) in enumerate(blk):
                    k.copy_(kv.k[layer][b], non_blocking=True)
                    v.copy_(kv.v[layer][b], non_blocking=True)

        def loop_load():
            for b, blk in enumerate(host_pieces):
                for layer, (k, v) in enumerate(blk):
                    kv.k[layer][b].copy_(k, non_blocking=True)
                    kv.v[layer][b].copy_(v, non_blocking=True)
    else:
        def loop_off():
            for b, blk in enumerate(host_pieces):
                for layer, (k, v) in enumerate(blk):
                    k.copy_(kv.k[layer][b])
                    v.copy_(kv.v[layer][b])

        def loop_load():
            for b, blk in enumerate(host_pieces):
                for layer, (k, v) in enumerate(blk):
                    kv.k[layer][b].copy_(k)
                    kv.v[layer][b].copy_(v)

    t_loop_off = time_median(loop_off, device, reps)
    t_loop_load = time_median(loop_load, device, reps)
    host_pieces = None  # freed; rebound rather than deleted, as the loops close over it

    # The pool's own methods.
    t_pool_off, t_pool_load = pool_copy_seconds(kv, device, reps)

    rows = []
    for direction, t_plain, t_loop, t_pool in (("offload", t_plain_off, t_loop_off, t_pool_off),
                                              ("load", t_plain_load, t_loop_load, t_pool_load)):
        gbps = lambda t: nbytes / t / 1e9  # noqa: E731
        rows.append([direction, fmt(gbps(t_plain)), fmt(gbps(t_loop)), fmt(gbps(t_pool)),
                     fmt(t_plain / t_pool), fmt(t_plain / t_loop),
                     fmt((t_loop - t_plain) / copies * 1e6), fmt((t_pool - t_plain) / copies * 1e6)])
    return rows, nbytes, copies, piece.numel() * piece.element_size()


def main() -> None:
    p = base_parser(__doc__.split("\n\n")[0])
    p.set_defaults(reps=3)
    p.add_argument("--dtype", default="float32", choices=sorted(DTYPES))
    p.add_argument("--blocks", type=int, default=256, help="blocks of the 0.6B-shaped cache")
    p.add_argument("--tiny-blocks", type=int, default=4096, help="blocks of the TINY-shaped cache")
    args = p.parse_args()
    device = setup(args)
    if args.quick:  # the script still works; no figure means anything
        args.blocks, args.tiny_blocks = 2, 16
    dtype = DTYPES[args.dtype]
    print(machine_line(device))
    print(f"dtype {args.dtype}, block_size {BLOCK_SIZE}; median of >= {args.reps} runs (>= 1 s of runs)")
    headers = ["direction", "plain GB/s", "loop GB/s", "pool GB/s", "pool/plain", "loop/plain",
               "loop overhead us/copy", "pool overhead us/copy"]
    for label, shape, blocks in (("Qwen3-0.6B shape", QWEN3_0_6B, args.blocks),
                                 ("TINY shape", TINY, args.tiny_blocks)):
        rows, nbytes, copies, piece_bytes = measure(shape, blocks, dtype, device, args.reps)
        print_table(headers, rows,
                    title=f"{label}: {blocks} blocks, {nbytes / 2**20:.1f} MiB, {copies:,} copies of "
                          f"{piece_bytes / 1024:g} KiB (plain = one contiguous copy; loop = the same "
                          f"small copies without the pool; ratios are bandwidth ratios)")


if __name__ == "__main__":
    main()
