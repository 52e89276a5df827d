"""(d) The lookup's own allocation copies blocks down, which can push out of host and disk the
very entries this lookup is about to reload (a disk entry's file is then deleted): the reload
still happens, with the KV each tier held when the walk found it."""

from kvtools import World, toks


def test_reload_survives_disk_eviction(observe, tmp_path):
    for disk in (1, 2):
        w = World(tmp_path, num_blocks=4, host=0, disk=disk, folder=f"disk{disk}")
        pool = w.pool
        x = w.name("X", toks(100, disk))
        w.serve(x, head_first=True)
        w.serve(w.name("Y", toks(200, 4)), head_first=True)   # X's blocks go to disk, Y's stay
        observe(f"disk {disk}: host keys, disk keys, files before", w.tiers())
        found = pool.lookup(x)
        observe(f"disk {disk}: lookup(X) returns", found)
        observe(f"disk {disk}: content numbers in returned blocks", w.tags(found))
        observe(f"disk {disk}: every returned block holds the KV of its prefix",
                w.tags(found) == w.expected_tags(x, len(found)))
        observe(f"disk {disk}: host keys, disk keys, files after", w.tiers())
        observe(f"disk {disk}: content numbers in the files", w.file_tags())
        observe(f"disk {disk}: counters", w.counters())
        observe(f"disk {disk}: broken invariants", w.problems())


def test_reload_survives_host_and_disk_eviction(observe, tmp_path):
    w = World(tmp_path, num_blocks=6, host=1, disk=2)
    pool = w.pool
    x = w.name("X", toks(100, 3))
    blocks_x = w.run(x)
    pool.free(blocks_x)                                     # X[0] reused last
    w.serve(w.name("Y", toks(200, 5)), head_first=True)     # X[2], X[1] to host (X[2] on to disk)
    w.serve(w.name("Z", toks(300, 1)))                      # X[0] to host (X[1] on to disk)
    observe("host keys, disk keys, files before", w.tiers())
    observe("free_queue before", list(pool.free_queue))
    found = pool.lookup(x)
    observe("lookup(X) returns", found)
    observe("every returned block holds the KV of its prefix", w.tags(found) == w.expected_tags(x, 3))
    observe("host keys, disk keys, files after", w.tiers())
    observe("content numbers in the files", w.file_tags())
    observe("counters", w.counters())
    observe("broken invariants", w.problems())
