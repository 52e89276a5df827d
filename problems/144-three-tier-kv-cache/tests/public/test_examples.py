"""The examples: a block comes back from disk, and the statement's worked example (one prompt found
on the GPU, in host memory and on disk at once)."""

from fake_kv import Contents, FakeKV, Names, run_prompt, serve, trace_pool, use_fake_files
from three_tier import ThreeTierPrefixCachingBlockPool

BS = 4  # tokens per block


def make(tmp_path, num_blocks, host, disk, policy="write_back", num_layers=2):
    pool = trace_pool(ThreeTierPrefixCachingBlockPool(num_blocks, BS, host, tmp_path / "disk", disk, policy))
    use_fake_files(pool)
    kv = FakeKV(num_layers, num_blocks)
    pool.kv = kv
    return pool, kv, Contents()


def counters(pool):
    return {"host writes": pool.num_host_writes, "disk writes": pool.num_disk_writes,
            "loaded from host": pool.num_loaded_from_host, "loaded from disk": pool.num_loaded_from_disk}


def test_example_reload_from_disk(observe, tmp_path):
    pool, kv, contents = make(tmp_path, num_blocks=2, host=1, disk=4)
    a, b, c = [1, 2, 3, 4], [5, 6, 7, 8], list(range(10, 18))  # 1, 1 and 2 blocks
    names = Names(pool, {"A": a, "B": b, "C": c})

    serve(pool, kv, contents, a)
    serve(pool, kv, contents, b)
    # C needs both blocks: A[0] and B[0] are copied to host, which holds one block, so A[0]
    # moves on to disk.
    serve(pool, kv, contents, c)
    observe("after C: host keys", names.host())
    observe("after C: disk keys", names.disk())
    observe("after C: files in the disk folder", names.files())
    observe("after C: content numbers in the files", names.file_tags())
    observe("after C: copies", counters(pool))

    found = pool.lookup(a)
    observe("lookup(A) returns", found)
    observe("content numbers in returned blocks", [kv.tag(blk) for blk in found])
    observe("content number A was computed with", contents.of(a))
    observe("after lookup(A): host keys", names.host())
    observe("after lookup(A): disk keys (least recently used first)", names.disk())
    observe("after lookup(A): files in the disk folder", names.files())
    observe("after lookup(A): free_queue", list(pool.free_queue))
    observe("after lookup(A): copies", counters(pool))
    observe("hit tokens: gpu, host, disk, all; queries",
            [pool.num_gpu_hits, pool.num_host_hits, pool.num_disk_hits, pool.num_hits, pool.num_queries])


def test_example_three_tiers(observe, tmp_path):
    """The statement's worked example: X[0] on the GPU, X[1] in host memory, X[2] on disk."""
    pool, kv, contents = make(tmp_path, num_blocks=4, host=1, disk=4)
    x = list(range(100, 112))           # X[0], X[1], X[2]
    y = list(range(200, 208))           # Y[0], Y[1]
    z = list(range(300, 304))           # Z[0]
    query = x + list(range(400, 404))   # X and a block never seen
    names = Names(pool, {"X": x, "Y": y, "Z": z})

    for step, (label, tokens) in enumerate([("X", x), ("Y", y), ("Z", z)], start=1):
        observe(f"step {step}: blocks of {label}", serve(pool, kv, contents, tokens))
        observe(f"step {step}: free_queue", list(pool.free_queue))
        observe(f"step {step}: host keys", names.host())
        observe(f"step {step}: disk keys", names.disk())

    found = pool.lookup(query)
    observe("step 4: lookup(X + a new block) returns", found)
    observe("step 4: content numbers in returned blocks", [kv.tag(blk) for blk in found])
    observe("step 4: content numbers of X[0], X[1], X[2]", [contents.of(x[:(i + 1) * BS]) for i in range(3)])
    observe("step 4: free_queue", list(pool.free_queue))
    observe("step 4: host keys", names.host())
    observe("step 4: disk keys", names.disk())
    observe("step 4: files in the disk folder", names.files())
    observe("step 4: copies", counters(pool))
    observe("step 4: hit tokens: gpu, host, disk, all; queries",
            [pool.num_gpu_hits, pool.num_host_hits, pool.num_disk_hits, pool.num_hits, pool.num_queries])

    blocks = run_prompt(pool, kv, contents, query)
    observe("step 5: the engine serves the query with blocks", blocks)
    observe("step 5: content numbers in them", [kv.tag(blk) for blk in blocks])
