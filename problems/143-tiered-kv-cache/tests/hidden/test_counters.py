"""(e) The counters, in tokens: num_queries (tokens asked for), num_hits (tokens of the blocks returned,
from either tier), num_offloaded (copies to host), num_loaded (copies back)."""

from kvtools import World, toks
from tiered import TieredPrefixCachingBlockPool


def test_counters(observe):
    w = World(TieredPrefixCachingBlockPool, num_blocks=6, capacity=3)
    pool = w.pool
    log = []

    def note(what):
        log.append([what] + w.counters())

    note("new pool")
    observe("kv of a new pool, before the engine binds it", TieredPrefixCachingBlockPool(6, 4, 3).kv)
    pool.lookup([1, 2, 3]); note("lookup of a partial block")
    pool.lookup([]); note("lookup of nothing")
    s = toks(1000, 3)
    a = w.name("A", s + toks(100, 1))
    b = w.name("B", s + toks(200, 2))
    c = w.name("C", toks(300, 5, extra=2))
    w.serve(a); note("serve A")
    w.serve(b); note("serve B (shares 3 blocks)")
    w.serve(c); note("serve C (evicts)")
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
    observe("after each step: what, queries, hits, offloaded, loaded", log)
    observe("host keys at the end", w.host_keys())
    observe("broken invariants", w.problems())
