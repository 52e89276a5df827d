"""(g) The counters: hit tokens per tier (num_gpu_hits + num_host_hits + num_disk_hits ==
num_hits), query tokens, and the copies (host writes, disk writes, loads from host and disk)."""

from kvtools import World, toks


def test_counters(observe, tmp_path):
    w = World(tmp_path, num_blocks=6, host=2, disk=3)
    pool = w.pool
    log = []

    def note(what):
        log.append([what] + w.counters())

    note("new pool")
    pool.lookup([1, 2, 3]); note("lookup of a partial block")
    pool.lookup([]); note("lookup of nothing")
    s = toks(1000, 3)
    a = w.name("A", s + toks(100, 1))
    b = w.name("B", s + toks(200, 2))
    c = w.name("C", toks(300, 5, extra=2))
    w.serve(a); note("serve A")
    w.serve(b); note("serve B (shares 3 blocks)")
    w.serve(c); note("serve C (pushes the rest down)")
    found = pool.lookup(a); note("lookup(A)")
    observe("lookup(A) returns", found)
    observe("content numbers in returned blocks", w.tags(found))
    found = pool.lookup(b + toks(5000, 1)); note("lookup(B + 1 block)")
    observe("lookup(B + 1 block) returns", found)
    observe("every returned block holds the KV of its prefix", w.tags(found) == w.expected_tags(b, len(found)))
    held = w.run(c); note("serve C again")
    found = pool.lookup(a); note("lookup(A) while C runs")
    observe("lookup(A) while C runs returns", found)
    w.release(held, head_first=True); note("C done")
    w.serve(a, head_first=True); note("serve A again")
    observe("after each step: what, gpu/host/disk/all hit tokens, queries, host writes, disk writes, "
            "loaded from host, loaded from disk", log)
    observe("hit tokens by tier add up to num_hits", pool.num_gpu_hits + pool.num_host_hits + pool.num_disk_hits
            == pool.num_hits)
    observe("host keys, disk keys, files at the end", w.tiers())
    observe("broken invariants", w.problems())
