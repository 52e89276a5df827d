"""The rules one at a time: the disk tier is LRU with its files, what is written when, where the
walk stops, what a lookup returns without free blocks, and the write-through policy."""

from fake_kv import Contents, FakeKV, Names, host_copy_tag, release, run_prompt, serve, trace_pool, use_fake_files
from three_tier import ThreeTierPrefixCachingBlockPool

BS = 4


def make(tmp_path, num_blocks, host, disk, policy="write_back", num_layers=2, folder="disk"):
    pool = trace_pool(ThreeTierPrefixCachingBlockPool(num_blocks, BS, host, tmp_path / folder, disk, policy))
    use_fake_files(pool)
    kv = FakeKV(num_layers, num_blocks)
    pool.kv = kv
    return pool, kv, Contents()


def copies(pool):
    """host writes, disk writes, loaded from host, loaded from disk"""
    return [pool.num_host_writes, pool.num_disk_writes, pool.num_loaded_from_host, pool.num_loaded_from_disk]


def hits(pool):
    """gpu, host, disk and all hit tokens; query tokens"""
    return [pool.num_gpu_hits, pool.num_host_hits, pool.num_disk_hits, pool.num_hits, pool.num_queries]


def test_disk_is_lru_with_capacity(observe, tmp_path):
    pool, kv, contents = make(tmp_path, num_blocks=2, host=1, disk=3)
    p = [[10 * i + j for j in range(BS)] for i in range(1, 9)]  # P1..P8, one block each
    names = Names(pool, {f"P{i + 1}": tokens for i, tokens in enumerate(p)})

    for i in range(7):
        serve(pool, kv, contents, p[i])
        observe(f"after P{i + 1}: host keys, disk keys, files",
                [names.host(), names.disk(), names.files()])
    observe("content numbers in the files", names.file_tags())

    found = pool.lookup(p[2])  # a disk hit is a use: P3 becomes the most recently used file
    observe("lookup(P3) returns", found)
    observe("content numbers in returned blocks", [kv.tag(blk) for blk in found])
    observe("after lookup(P3): host keys, disk keys, files", [names.host(), names.disk(), names.files()])

    serve(pool, kv, contents, p[7])
    observe("after P8: host keys, disk keys, files", [names.host(), names.disk(), names.files()])
    observe("lookup(P4) returns (its file was deleted)", pool.lookup(p[3]))
    observe("host writes, disk writes, loaded from host, loaded from disk", copies(pool))


def test_when_not_to_write(observe, tmp_path):
    # A block without a hash (a partial block) goes nowhere.
    pool, kv, contents = make(tmp_path, num_blocks=3, host=0, disk=4, folder="partial")
    pq = {"P": [1, 2, 3, 4, 5, 6], "Q": list(range(10, 22))}
    names = Names(pool, pq)
    serve(pool, kv, contents, pq["P"])
    serve(pool, kv, contents, pq["Q"])
    observe("partial block: disk keys, files", [names.disk(), names.files()])
    observe("partial block: host writes, disk writes, loaded from host, loaded from disk", copies(pool))

    # A block already on disk is not written again when host lets it go, nor moved.
    pool, kv, contents = make(tmp_path, num_blocks=2, host=1, disk=4)
    prompts = {"A": [1, 2, 3, 4], "B": [5, 6, 7, 8], "C": list(range(10, 18)), "D": list(range(20, 28)),
               "E": list(range(30, 38))}
    names = Names(pool, prompts)
    state = lambda: [names.host(), names.disk(), copies(pool)]
    for label in "ABC":
        serve(pool, kv, contents, prompts[label])
    observe("after A, B, C: host keys, disk keys, copies", state())
    found = pool.lookup(prompts["A"])
    observe("lookup(A) returns", found)
    observe("content numbers in returned blocks", [kv.tag(blk) for blk in found])
    observe("after lookup(A): host keys, disk keys, copies", state())
    serve(pool, kv, contents, prompts["D"])  # reuses A's block: A goes to host again
    observe("after D: host keys, disk keys, copies", state())
    serve(pool, kv, contents, prompts["E"])  # host lets A go; disk has it already
    observe("after E: host keys, disk keys, copies", state())
    observe("after E: files", names.files())
    observe("after E: content numbers in the files", names.file_tags())


def test_walk_stops_at_first_miss(observe, tmp_path):
    pool, kv, contents = make(tmp_path, num_blocks=4, host=0, disk=1)
    x = list(range(100, 112))  # X[0], X[1], X[2]
    names = Names(pool, {"X": x})
    serve(pool, kv, contents, x, head_first=True)
    held_f = run_prompt(pool, kv, contents, list(range(200, 208)))  # reuses X[0]'s block
    held_g = run_prompt(pool, kv, contents, list(range(300, 304)))  # reuses X[1]'s block
    observe("disk keys", names.disk())
    observe("GPU blocks of X[0], X[1], X[2]", [pool.hash_to_block.get(h) for h in pool.block_hashes(x)])

    before = hits(pool)
    observe("lookup(X) returns (X[0] is nowhere)", pool.lookup(x))
    observe("hit and query tokens added by lookup(X)", [a - b for a, b in zip(hits(pool), before)])
    observe("free_queue after lookup(X)", list(pool.free_queue))
    observe("disk keys after lookup(X)", names.disk())

    before = hits(pool)
    found = pool.lookup(list(range(300, 307)))  # G's block (in use) and a partial block
    observe("lookup(G + 3 tokens) returns", found)
    observe("hit and query tokens added by lookup(G + 3 tokens)", [a - b for a, b in zip(hits(pool), before)])
    release(pool, held_g)
    release(pool, held_f)
    observe("host writes, disk writes, loaded from host, loaded from disk", copies(pool))


def test_allocation_failure(observe, tmp_path):
    pool, kv, contents = make(tmp_path, num_blocks=4, host=1, disk=4)
    a = list(range(100, 112))  # A[0], A[1], A[2]
    b = list(range(200, 208))
    c = list(range(300, 304))
    names = Names(pool, {"A": a, "B": b, "C": c})
    state = lambda: [names.host(), names.disk(), names.files()]

    serve(pool, kv, contents, a)
    held_b = run_prompt(pool, kv, contents, b)  # A[2] to host
    held_c = run_prompt(pool, kv, contents, c)  # A[1] to host, A[2] to disk
    observe("host keys, disk keys, files", state())
    observe("free_queue", list(pool.free_queue))

    # A[0] is a free GPU hit, A[1] a host hit, A[2] a disk hit: two blocks needed, none spare.
    found = pool.lookup(a)
    observe("lookup(A) with no block to spare returns", found)
    observe("free_queue after", list(pool.free_queue))
    observe("ref_cnt after", list(pool.ref_cnt))
    observe("host keys, disk keys, files after", state())
    observe("copies after", copies(pool))
    observe("hit tokens after", hits(pool))

    release(pool, held_c)  # one block spare, still one short: nothing may be copied
    observe("lookup(A) one block short returns", pool.lookup(a))
    observe("host keys, disk keys, files one block short", state())
    observe("copies one block short", copies(pool))

    release(pool, held_b)
    found = pool.lookup(a)
    observe("lookup(A) with enough blocks returns", found)
    observe("content numbers in returned blocks", [kv.tag(blk) for blk in found])
    observe("content numbers A was computed with", [contents.of(a[:(i + 1) * BS]) for i in range(3)])
    observe("free_queue at the end", list(pool.free_queue))
    observe("host keys, disk keys, files at the end", state())
    observe("copies at the end", copies(pool))
    observe("hit tokens at the end", hits(pool))


def test_write_through(observe, tmp_path):
    for policy in ("write_through", "write_back"):
        pool, kv, contents = make(tmp_path, num_blocks=3, host=2, disk=3, policy=policy, folder=policy)
        prompts = {"A": list(range(100, 108)), "B": list(range(200, 208)), "C": list(range(300, 312))}
        names = Names(pool, prompts)
        state = lambda: [names.host(), names.disk(), copies(pool)]

        blocks = run_prompt(pool, kv, contents, prompts["A"])  # cached, still running
        observe(f"{policy}: A running: host keys, disk keys, copies", state())
        release(pool, blocks)
        serve(pool, kv, contents, prompts["B"])
        observe(f"{policy}: after B: host keys, disk keys, copies", state())
        observe(f"{policy}: after B: content numbers in host", [host_copy_tag(e) for e in pool.host.values()])

        found = pool.lookup(prompts["A"])
        observe(f"{policy}: lookup(A) returns", found)
        observe(f"{policy}: content numbers in returned blocks", [kv.tag(blk) for blk in found])
        observe(f"{policy}: after lookup(A): host keys, disk keys, copies", state())
        serve(pool, kv, contents, prompts["C"])
        observe(f"{policy}: after C: host keys, disk keys, copies", state())
        observe(f"{policy}: after C: files", names.files())
        observe(f"{policy}: after C: content numbers in the files", names.file_tags())
        observe(f"{policy}: hit tokens", hits(pool))


def test_what_write_through_costs(observe, tmp_path):
    """The statement's question, measured: the same conversations under both policies."""
    system = list(range(1000, 1008))  # two blocks every conversation shares
    results = {}
    for policy in ("write_back", "write_through"):
        pool, kv, contents = make(tmp_path, num_blocks=8, host=4, disk=12, policy=policy, folder=policy)
        chats = [system + [2000 + 100 * c + i for i in range(3)] for c in range(4)]
        for turn in range(3):
            for c in range(4):
                served = serve(pool, kv, contents, chats[c])
                reply = [5000 + 100 * c + 10 * turn + i for i in range(5)]
                chats[c] = chats[c] + reply if served is not None else chats[c]
        made = pool.num_host_writes + pool.num_disk_writes
        read = pool.num_loaded_from_host + pool.num_loaded_from_disk
        results[policy] = {"host writes": pool.num_host_writes, "disk writes": pool.num_disk_writes,
                           "loaded from host": pool.num_loaded_from_host,
                           "loaded from disk": pool.num_loaded_from_disk,
                           "copies made": made, "copies read back": read,
                           "hit tokens": pool.num_hits, "query tokens": pool.num_queries}
        observe(f"{policy}: copies and hits", results[policy])
    observe("write-through makes more copies",
            results["write_through"]["copies made"] > results["write_back"]["copies made"])
