"""Small helpers shared by the benchmark scripts: timing with device synchronisation, a 0.6B-shaped
random model built cheaply in memory, and a plain-text table printer.

Not a benchmark itself; the scripts next to it import it as `_common`.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

import torch  # noqa: E402

import reference  # noqa: E402,F401  (puts the handbook's flat modules on sys.path)

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

# Qwen3-0.6B's shape (the released checkpoint's config.json), tied embeddings.
QWEN3_0_6B = dict(vocab_size=151_936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                  num_attention_heads=16, num_key_value_heads=8, head_dim=128)


QUICK = False  # --quick: one timed run, no warm-up, no minimum time (tests/project/test_benchmarks.py)


def base_parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true",
                   help="tiny sizes, one repetition: checks that the script still runs; its "
                        "figures mean nothing")
    p.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads (default: 2; 1 with --quick, whose figures mean nothing "
                        "and which the tests run beside other busy processes)")
    p.add_argument("--reps", type=int, default=5, help="timed repetitions; the median is reported")
    return p


def setup(args) -> torch.device:
    global QUICK
    if getattr(args, "quick", False):
        QUICK, args.reps = True, 1
    if args.threads is None:
        args.threads = 1 if QUICK else 2
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)  # random weights must not wander into slow denormal arithmetic
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no CUDA device visible to torch")
    warn_if_busy()
    return device


def warn_if_busy() -> None:
    """Say so when other processes compete for the cores. OpenMP threads spin while they wait for
    each other; when one of them loses its core every parallel region stalls for a scheduler time
    slice, and a workload of many small ops (a tiny model's prefill, the engine's decode) then
    runs 10x slower or worse on a 2-core machine. Figures taken like that measure the neighbours."""
    if not hasattr(os, "getloadavg"):
        return
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    if load >= 0.75 * cores:
        print(f"WARNING: load average {load:.1f} on {cores} cores: other processes compete for the "
              f"CPU and small-op timings can be off by 10x; rerun when the machine is idle, or with "
              f"OMP_WAIT_POLICY=PASSIVE (steadier under contention, slower for small ops when idle).")


def sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def time_median(fn, device, reps: int, warmup: int = 2, setup_fn=None, min_time: float = 1.0,
                max_reps: int = 500) -> float:
    """Median wall time of `fn()` in seconds, synchronising the device around each run. Runs at
    least `reps` times and, for cheap calls, keeps going until `min_time` seconds of timed runs
    (at most `max_reps`): on a small shared machine single runs are noisy. `setup_fn()`, when
    given, runs untimed before every run (warm-ups included)."""
    if QUICK:
        reps, warmup, min_time = 1, 0, 0.0
    for _ in range(warmup):
        if setup_fn:
            setup_fn()
        fn()
    sync(device)
    times = []
    while len(times) < reps or (sum(times) < min_time and len(times) < max_reps):
        if setup_fn:
            setup_fn()
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def pool_copy_seconds(kv, device, reps: int) -> tuple[float, float]:
    """Median seconds to offload every block of `kv` through the tiered pool's own `_offload`,
    and to copy them all back through `_load`."""
    from tiered import TieredPrefixCachingBlockPool

    num_blocks = kv.num_blocks
    pool = TieredPrefixCachingBlockPool(num_blocks, kv.block_size, host_capacity_blocks=num_blocks)
    pool.kv = kv

    def offload_all():
        for b in range(num_blocks):
            pool._offload(b, b + 1)

    t_off = time_median(offload_all, device, reps, setup_fn=pool.host.clear)
    copies = list(pool.host.values())  # the last repetition's host copies

    def load_all():
        for b, copy in enumerate(copies):
            pool._load(b, copy)

    return t_off, time_median(load_all, device, reps)


def machine_line(device) -> str:
    dev = torch.device(device)
    where = (torch.cuda.get_device_name(dev) if dev.type == "cuda"
             else f"CPU ({os.cpu_count()} logical cores, {torch.get_num_threads()} torch threads)")
    load = " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    omp = os.environ.get("OMP_WAIT_POLICY", "default")
    return (f"{where}; OMP_WAIT_POLICY {omp}; torch {torch.__version__}; Python "
            f"{platform.python_version()}; {time.strftime('%Y-%m-%d %H:%M')}; load average {load}")


@torch.no_grad()
def build_random_model(shape: dict, device, dtype=torch.float32, tie: bool = True, seed: int = 0):
    """A `mini_llm.Transformer` of `shape` with random weights, built without the default
    initialisers (kaiming on 600M parameters is slow on a small CPU): parameters are created
    uninitialised on the target device and filled in place. Projections get std 1/sqrt(fan_in),
    the embedding 0.02. The values repeat with a period of 1M; for timing they only need to be
    finite and normal-sized."""
    from mini_llm import Qwen3Config, Transformer

    cfg = Qwen3Config(**shape, tie_word_embeddings=tie, torch_dtype=str(dtype).replace("torch.", ""))
    with torch.device("meta"):
        model = Transformer(cfg)
    model = model.to_empty(device=device)
    if tie:
        model.lm_head.weight = model.model.embed_tokens.weight
    # Filling 600M parameters from a generator takes ~15 s on two cores; tiling one random buffer
    # of 1M values (a different offset per tensor) costs about a memcpy.
    gen = torch.Generator(device=device).manual_seed(seed)
    buf = torch.randn(1 << 20, generator=gen, device=device)
    for i, (name, p) in enumerate(model.named_parameters()):  # a tied weight is listed once
        if name.endswith("norm.weight"):
            p.fill_(1.0)
            continue
        flat = p.view(-1)
        shift = (i * 7919) % buf.numel()
        src = torch.cat((buf[shift:], buf[:shift]))
        for start in range(0, flat.numel(), src.numel()):
            chunk = flat[start:start + src.numel()]
            chunk.copy_(src[:chunk.numel()])
        p.mul_(0.02 if name.endswith("embed_tokens.weight") else p.shape[-1] ** -0.5)
    return model.to(dtype=dtype).eval()


def param_counts(model) -> tuple[int, int]:
    """(all parameters, parameters of the decoder layers): the second is what a prefill multiplies
    every token by (embedding lookups are not matmuls; the output layer is not needed for KV)."""
    total = sum(p.numel() for p in model.parameters())
    layers = sum(p.numel() for p in model.model.layers.parameters())
    return total, layers


def kv_bytes_per_token(cfg, element_size: int) -> int:
    return 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * element_size


def print_table(headers: list[str], rows: list[list], title: str | None = None) -> None:
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    if title:
        print(f"\n{title}")
    for i, r in enumerate(cells):
        print("  ".join(c.rjust(w) if j else c.ljust(w) for j, (c, w) in enumerate(zip(r, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))


def fmt(x: float, digits: int = 3) -> str:
    """A number with `digits` significant digits, without scientific notation for usual sizes."""
    if x == 0:
        return "0"
    if abs(x) >= 10 ** digits:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}" if abs(x) >= 1e-3 else f"{x:.2e}"
