"""Problem 144 (three-tier KV cache) beyond what `judge check 144` proves:

- its public suite runs in the page's runner (a child CPython here, Pyodide in the browser) with
  the same observations as in the grading sandbox, the disk tier's files in the runner's own
  temporary folders;
- the accepted files behave exactly like the reference on seeded random workloads under both
  write policies, the whole state (GPU blocks, host and disk order, the files in the folder, the
  counters) compared after every operation;
- the chapter's code shape with the files read after the allocation crashes on a workload where
  the allocation deletes a file it is about to read;
- nothing the sandbox mounts for 144 is an answer (not 143's `tiered`, not `three_tier`).
"""

from __future__ import annotations

import importlib.util
import os
import random

import pytest
from page_support import default_root, run_page
from paths import REPO

import reference  # noqa: F401
from judge import load_problem
from judge.grading.reference_cache import public_expectations
from judge.problem import ProblemBank

from kv_cache import KVCache
from three_tier import ThreeTierPrefixCachingBlockPool as Reference

FOLDER = REPO / "problems" / "144-three-tier-kv-cache"
SUBMISSIONS = FOLDER / "submissions"
BS = 2

pytestmark = pytest.mark.usefixtures("run_cache")


def load(path):
    spec = importlib.util.spec_from_file_location(f"submission_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ThreeTierPrefixCachingBlockPool


# ---- the page ---------------------------------------------------------------------------------

def page_run(info, source: str, expected) -> dict:
    spec = {"module": info.module, "source": source, "tests": info.public_files(),
            "handbook": info.handbook_sources(), "expected": expected,
            "weights": info.weights}
    return run_page(default_root(), [spec], timeout_s=120)[0]


def test_public_suite_runs_in_the_page():
    info = ProblemBank(REPO / "problems", REPO / "reference").get("144")
    problem = load_problem("144")
    assert info is not None and info.browser and problem.config.browser
    handbook = info.handbook_sources()
    assert set(handbook).isdisjoint({"three_tier", "tiered"})

    expected = public_expectations(problem)
    assert set(expected) == {t.name for t in problem.tests("public")}
    ref = page_run(info, problem.reference_path.read_text(encoding="utf-8"), None)
    assert ref["verdict"] == "AC", ref["first_failure"] or ref["compile_error"]
    assert ref["observations"] == {n: e["observations"] for n, e in expected.items()}

    for path in problem.submissions("accepted"):
        res = page_run(info, path.read_text(encoding="utf-8"), expected)
        assert res["verdict"] == "AC", (path.name, res["first_failure"])
    bad = page_run(info, (SUBMISSIONS / "wrong_answer" / "promotes_disk_hits.py").read_text(encoding="utf-8"),
                   expected)
    ff = bad["first_failure"]
    assert bad["verdict"] == "WA" and ff["test"] == "public/test_basic.py::test_disk_is_lru_with_capacity", ff
    # safetensors is not in the page; the format must come from the stand-in, not an import.
    starter = page_run(info, problem.starter_source, expected)
    assert starter["verdict"] not in ("AC", "CE", "unsupported")


def test_nothing_mounted_is_an_answer():
    mounted = {p.stem for p in load_problem("144").handbook_paths}
    assert mounted.isdisjoint({"tiered", "three_tier"})
    assert load_problem("144").module == "three_tier"


# ---- equivalence ----------------------------------------------------------------------------

PROMPTS = [[s] * BS + [s + 1] * BS + [q] * (BS * (q % 3)) + [7] * (q % 2)
           for s in (10, 20, 30) for q in range(1, 6)]


def workload(seed, steps=150):
    rng = random.Random(seed)
    kinds = ["serve", "serve", "finish", "lookup", "allocate"]
    ops = [(rng.choice(kinds), rng.randrange(len(PROMPTS)), rng.random() < 0.5) for _ in range(steps)]
    return ops, rng.randint(3, 8), rng.randint(0, 3), rng.randint(0, 6)


def trace(pool_cls, folder, ops, num_blocks, host, disk, policy):
    """Runs `ops` the way the engine drives a pool; returns what could be observed after each."""
    pool = pool_cls(num_blocks, BS, host, folder, disk, policy)
    kv = KVCache(2, num_blocks, BS, 1, 2)
    pool.kv = kv
    held, out, stamp = [], [], [0]

    def compute(block):
        stamp[0] += 1
        for layer in range(2):
            kv.k[layer][block].fill_(stamp[0])
            kv.v[layer][block].fill_(-stamp[0])

    for op, i, flag in ops:
        tokens = PROMPTS[i]
        result = None
        if op == "serve":
            hits = pool.lookup(tokens[:-1])
            pool.touch(hits)
            new = pool.allocate(-(-len(tokens) // BS) - len(hits))
            if new is None:
                pool.free(hits)
            else:
                for b in new:
                    compute(b)
                table = hits + new
                pool.cache_blocks(tokens, table, len(tokens))
                if flag:
                    pool.free(table)
                else:
                    held.append(table)
            result = hits
        elif op == "finish" and held:
            pool.free(held.pop(i % len(held)))
        elif op == "lookup":
            result = pool.lookup(tokens)
        elif op == "allocate":
            result = pool.allocate(1)
            if result is not None:
                compute(result[0])
                held.append(result)
        out.append({
            "result": result, "free_queue": list(pool.free_queue), "ref_cnt": list(pool.ref_cnt),
            "hashes": list(pool.block_hash),
            "kv": [kv.k[0][b][0, 0, 0].item() for b in range(num_blocks)],
            "host": list(pool.host), "disk": list(pool.disk), "files": sorted(os.listdir(folder)),
            "counters": [pool.num_queries, pool.num_hits, pool.num_gpu_hits, pool.num_host_hits,
                         pool.num_disk_hits, pool.num_host_writes, pool.num_disk_writes,
                         pool.num_loaded_from_host, pool.num_loaded_from_disk],
        })
    return out


def first_difference(a, b):
    for step, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return step, {k: (x[k], y[k]) for k in x if x[k] != y[k]}
    return None


@pytest.mark.parametrize("path", sorted(SUBMISSIONS.glob("accepted/*.py")), ids=lambda p: p.stem)
def test_accepted_files_equal_the_reference(path, tmp_path):
    cls = load(path)
    disk_hits = 0
    for seed in range(24):
        policy = ("write_back", "write_through")[seed % 2]
        ops, blocks, host, disk = workload(seed)
        want = trace(Reference, tmp_path / f"ref{seed}", ops, blocks, host, disk, policy)
        got = trace(cls, tmp_path / f"sub{seed}", ops, blocks, host, disk, policy)
        assert first_difference(want, got) is None, (seed, policy, first_difference(want, got))
        disk_hits += want[-1]["counters"][4]
    assert disk_hits > 0, "the workloads never reload from disk"


def test_wrong_files_depart_from_the_reference(tmp_path):
    departed = {}
    for path in sorted(SUBMISSIONS.glob("wrong_answer/*.py")):
        cls = load(path)
        for seed in range(24):
            policy = ("write_back", "write_through")[seed % 2]
            ops, blocks, host, disk = workload(seed)
            want = trace(Reference, tmp_path / f"ref-{path.stem}-{seed}", ops, blocks, host, disk, policy)
            try:
                got = trace(cls, tmp_path / f"sub-{path.stem}-{seed}", ops, blocks, host, disk, policy)
            except Exception as exc:  # noqa: BLE001 - a crash departs too
                departed[path.stem] = type(exc).__name__
                break
            if first_difference(want, got) is not None:
                departed[path.stem] = "differs"
                break
    names = {p.stem for p in SUBMISSIONS.glob("wrong_answer/*.py")}
    # These two only show on torch tensors under the grader's file checks: the names in the file
    # (the page's stand-in rejects them) and pushing a file out during a reload's own allocation.
    assert names - set(departed) <= {"stacked_tensor_file", "reads_files_after_allocate"}, departed


def test_reading_files_after_the_allocation_crashes(tmp_path):
    cls = load(SUBMISSIONS / "wrong_answer" / "reads_files_after_allocate.py")
    pool = cls(2, BS, 0, tmp_path / "disk", 1)
    pool.kv = KVCache(2, 2, BS, 1, 2)
    x, y = [1, 1], [2, 2, 3, 3]
    blocks = pool.allocate(1)
    pool.cache_blocks(x, blocks, 2)
    pool.free(blocks)
    blocks = pool.allocate(2)                   # X's block reused: X's file is the only one
    pool.cache_blocks(y, blocks, 4)
    pool.free(blocks)
    assert [len(pool.disk), pool.lookup(x[:1])] == [1, []]
    with pytest.raises(FileNotFoundError):
        pool.lookup(x)                          # allocating for X pushes Y[1] down, X's file out
