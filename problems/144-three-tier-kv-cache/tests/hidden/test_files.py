"""(a) The disk tier's files: one safetensors file per block, named by the block hash, holding
`k.<layer>` and `v.<layer>`; a file exists exactly while its hash is in `disk`; the disk tier is
LRU with its own capacity, and a disk hit is a use."""

import os

from kvtools import World, file_name, read_file, toks


def test_files_are_safetensors(observe, tmp_path):
    w = World(tmp_path, num_blocks=3, host=1, disk=8, num_layers=3, folder="nested/disk")
    pool = w.pool
    observe("the disk folder exists (created by the pool)", os.path.isdir(w.disk_dir))
    observe("files in a new pool's folder", w.files())
    a = w.name("A", toks(100, 3))
    w.serve(a, head_first=True)
    w.serve(w.name("B", toks(200, 3)), head_first=True)   # A's three blocks go down
    observe("host keys, disk keys, files", w.tiers())

    from safetensors.torch import load_file
    shapes = {}
    for h in pool.disk:
        path = os.path.join(w.disk_dir, file_name(h))
        names, content = read_file(path, 3)
        tensors = load_file(path)
        shapes[w.names[h]] = {
            "tensor names": names,
            "content number": content,
            "shapes equal the block's": all(list(tensors[f"{kind}.{l}"].shape) == list(w.kv.k[l][0].shape)
                                            for l in range(3) for kind in "kv"),
            "dtypes": sorted({str(t.dtype) for t in tensors.values()}),
        }
    observe("each file, read with safetensors", shapes)
    observe("content numbers A was computed with", w.expected_tags(a, 3))
    observe("disk maps each hash to its file's path",
            {w.names[h]: os.path.basename(str(p)) == file_name(h) for h, p in pool.disk.items()})
    observe("broken invariants", w.problems())


def test_disk_capacity_and_recency(observe, tmp_path):
    w = World(tmp_path, num_blocks=2, host=0, disk=3)
    pool = w.pool
    p = [w.name(f"P{i}", toks(100 * i, 1)) for i in range(1, 9)]
    for i in range(5):
        w.serve(p[i])
        observe(f"after P{i + 1}: host keys, disk keys, files", w.tiers())
    sizes_ok = True

    found = pool.lookup(p[1])                           # a disk hit: P2 becomes most recent
    observe("lookup(P2) returns", found)
    observe("content numbers in returned blocks", w.tags(found))
    observe("after lookup(P2): host keys, disk keys, files", w.tiers())
    observe("lookup(P1) returns (deleted)", pool.lookup(p[0]))
    for i in range(5, 8):
        w.serve(p[i])
        sizes_ok = sizes_ok and len(pool.disk) <= 3 and len(os.listdir(w.disk_dir)) <= 3
        observe(f"after P{i + 1}: host keys, disk keys, files", w.tiers())
    observe("disk never held more than 3 files", sizes_ok)
    observe("content numbers in the files", w.file_tags())
    observe("counters: hit tokens by tier, all, queries; copies", w.counters())
    observe("broken invariants", w.problems())


def test_disk_capacity_zero(observe, tmp_path):
    """No disk tier: every file is written, counted and deleted at once; the pool then behaves as
    the two-tier pool of problem 143."""
    w = World(tmp_path, num_blocks=3, host=3, disk=0)
    pool = w.pool
    a = w.name("A", toks(100, 2))
    b = w.name("B", toks(200, 3))
    w.serve(a, head_first=True)
    w.serve(b, head_first=True)
    observe("after B: host keys, disk keys, files", w.tiers())
    w.serve(w.name("C", toks(300, 3)), head_first=True)
    observe("after C: host keys, disk keys, files", w.tiers())
    found = pool.lookup(a)
    observe("lookup(A) returns", found)
    found = pool.lookup(b)
    observe("lookup(B) returns", found)
    observe("content numbers in returned blocks", w.tags(found))
    observe("counters: hit tokens by tier, all, queries; copies", w.counters())
    observe("broken invariants", w.problems())


def test_disk_folder_that_exists_already(observe, tmp_path):
    """The pool creates its folder if needed, and takes one that is already there."""
    (tmp_path / "disk").mkdir()
    w = World(tmp_path, num_blocks=2, host=0, disk=4)
    observe("kv of a new pool, before the engine binds it",
            type(w.pool)(2, 4, 0, str(tmp_path / "other"), 4).kv)
    for start in (100, 200, 300):
        w.serve(w.name(f"P{start}", toks(start, 2)))
    observe("host keys, disk keys, files", w.tiers())
    observe("broken invariants", w.problems())
