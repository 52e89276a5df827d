"""(e) Write-back: a block is copied down only when a tier lets it go. GPU -> host as in problem
143 (whatever disk holds); host -> disk unless disk has the hash (then nothing is written or
moved); a disk hit goes straight back to the GPU, host untouched; copies are copies."""

from kvtools import World, host_tag, toks


def test_host_eviction_writes_once(observe, tmp_path):
    w = World(tmp_path, num_blocks=3, host=1, disk=4)
    pool = w.pool
    a = w.name("A", toks(100, 1))
    steps = []

    def step(what):
        steps.append([what] + w.tiers() + [w.copies()])

    w.serve(a); step("serve A")
    w.serve(w.name("B", toks(200, 3))); step("serve B")          # A to host
    w.serve(w.name("C", toks(300, 3))); step("serve C")          # A to disk
    found = pool.lookup(a); step("lookup(A)")                    # from disk, host untouched
    observe("lookup(A) returns", found)
    observe("content numbers in returned blocks", w.tags(found))
    w.serve(a, head_first=True); step("serve A again")
    w.serve(w.name("D", toks(400, 3)), head_first=True); step("serve D")  # A to host: disk has it
    w.serve(w.name("E", toks(500, 3)), head_first=True); step("serve E")  # host lets A go: no write
    found = pool.lookup(a); step("lookup(A) once more")
    observe("lookup(A) once more returns", found)
    observe("after each step: what, host keys, disk keys, files, copies", steps)
    observe("content numbers in the files", w.file_tags())
    observe("broken invariants", w.problems())


def test_host_capacity_zero(observe, tmp_path):
    """No host tier: each block a GPU reuse lets go is copied to host, counted, and written to
    disk at once."""
    w = World(tmp_path, num_blocks=4, host=0, disk=6)
    pool = w.pool
    a = w.name("A", toks(100, 3, extra=2))
    w.serve(a)
    w.serve(w.name("B", toks(200, 4)))
    observe("after B: host keys, disk keys, files", w.tiers())
    observe("after B: copies", w.copies())
    found = pool.lookup(a)
    observe("lookup(A) returns", found)
    observe("content numbers in returned blocks", w.tags(found))
    observe("after lookup(A): host keys, disk keys, files", w.tiers())
    w.serve(w.name("C", toks(300, 4)), head_first=True)
    observe("after C: host keys, disk keys, files", w.tiers())
    observe("counters", w.counters())
    observe("broken invariants", w.problems())


def test_copies_not_views(observe, tmp_path):
    w = World(tmp_path, num_blocks=2, host=1, disk=4)
    pool = w.pool
    a = w.name("A", toks(100, 2))
    b = w.name("B", toks(200, 2))
    c = w.name("C", toks(300, 2))
    w.serve(a, head_first=True)
    w.serve(b, head_first=True)                      # A's blocks hold B's KV now
    observe("host copies after B hold", [host_tag(e) for e in pool.host.values()])
    observe("files after B hold", w.file_tags())
    w.serve(c, head_first=True)                      # and C's
    observe("files after C hold", w.file_tags())
    found = pool.lookup(a)
    observe("lookup(A) returns", found)
    observe("content numbers in returned blocks", w.tags(found))
    found = pool.lookup(b)
    observe("lookup(B) returns", found)
    observe("content numbers in returned blocks for B", w.tags(found))
    observe("host keys, disk keys, files", w.tiers())
    observe("host copies at the end hold", [host_tag(e) for e in pool.host.values()])
    observe("broken invariants", w.problems())
