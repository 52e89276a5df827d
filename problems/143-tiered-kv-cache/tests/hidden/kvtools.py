"""Helpers for the hidden tests: a real (torch) paged KV cache filled with recognisable
patterns, a stand-in for the engine's prompt handling, and the pool's invariants.

Block content number `tag` at layer `l` holds `tag*1000 + l*100 + i` (i = 0, 1, ... over the
block's elements) in K and the negatives in V.
"""

import torch
from kv_cache import KVCache

BS = 4


def make_kv(num_blocks, num_layers=2):
    return KVCache(num_layers=num_layers, num_blocks=num_blocks, block_size=BS, num_kv_heads=2, head_dim=2)


def _pattern(t, tag, layer, sign):
    flat = torch.arange(t.numel(), dtype=torch.float32) + (tag * 1000 + layer * 100)
    return (sign * flat).reshape(t.shape)


def write(kv, block, tag):
    for layer in range(len(kv.k)):
        kv.k[layer][block].copy_(_pattern(kv.k[layer][block], tag, layer, 1))
        kv.v[layer][block].copy_(_pattern(kv.v[layer][block], tag, layer, -1))


def tag_of_tensors(ks, vs):
    ks = [k.detach().to("cpu") for k in ks]
    vs = [v.detach().to("cpu") for v in vs]
    if bool((ks[0] == 0).all()):
        return "empty"
    tag = int(ks[0].flatten()[0].item()) // 1000
    for layer, (k, v) in enumerate(zip(ks, vs)):
        if not torch.equal(k, _pattern(k, tag, layer, 1)) or not torch.equal(v, _pattern(v, tag, layer, -1)):
            return "garbled"
    return tag


def tag(kv, block):
    n = len(kv.k)
    return tag_of_tensors([kv.k[l][block] for l in range(n)], [kv.v[l][block] for l in range(n)])


def host_tag(entry):
    """The content number one `host` entry (a per-layer list of (K, V) copies) holds."""
    try:
        return tag_of_tensors([k for k, _ in entry], [v for _, v in entry])
    except Exception:
        return "unreadable"


class Contents:
    """Content number per distinct prefix, in order of first use."""

    def __init__(self):
        self.tags = {}

    def of(self, prefix):
        return self.tags.setdefault(tuple(prefix), len(self.tags) + 1)


class World:
    """A pool, its KV cache and the bookkeeping the tests need to judge it."""

    def __init__(self, pool_cls, num_blocks, capacity, num_layers=2):
        self.pool = pool_cls(num_blocks, BS, capacity)
        self.kv = make_kv(num_blocks, num_layers)
        self.pool.kv = self.kv
        self.contents = Contents()
        self.hash_tag = {}   # block hash -> content number of that prefix
        self.names = {}      # block hash -> "X[i]"

    def name(self, label, tokens):
        for i, h in enumerate(self.pool.block_hashes(tokens)):
            self.names.setdefault(h, f"{label}[{i}]")
            self.hash_tag.setdefault(h, self.contents.of(tokens[:(i + 1) * BS]))
        return tokens

    def run(self, tokens):
        """The engine's prompt handling: lookup, touch, allocate the rest, compute, register."""
        pool = self.pool
        for i, h in enumerate(pool.block_hashes(tokens)):
            self.hash_tag.setdefault(h, self.contents.of(tokens[:(i + 1) * BS]))
        hits = pool.lookup(tokens)
        pool.touch(hits)
        need = -(-len(tokens) // BS) - len(hits)
        new = pool.allocate(need)
        if new is None:
            pool.free(hits)
            return None
        blocks = list(hits) + list(new)
        for i in range(len(hits), len(blocks)):
            write(self.kv, blocks[i], self.contents.of(tokens[:(i + 1) * BS]))
        pool.cache_blocks(tokens, blocks, len(tokens))
        return blocks

    def serve(self, tokens, head_first=False):
        """Serve a prompt and finish it at once (see `release`); returns its block table, or
        None if it did not fit."""
        blocks = self.run(tokens)
        self.release(blocks, head_first)
        return blocks

    def release(self, blocks, head_first=False):
        """Finish a request: `free` its block table as the engine does, as it is (the pool
        releases the last block first); `head_first` passes it reversed. Nothing happens if it
        never got any blocks."""
        if blocks is not None:
            self.pool.free(list(reversed(blocks)) if head_first else list(blocks))

    def host_keys(self):
        return [self.names.get(h, "?") for h in self.pool.host]

    def tags(self, blocks):
        return [tag(self.kv, b) for b in blocks]

    def expected_tags(self, tokens, n):
        return [self.contents.of(tokens[:(i + 1) * BS]) for i in range(n)]

    def counters(self):
        p = self.pool
        return [p.num_queries, p.num_hits, p.num_offloaded, p.num_loaded]

    def problems(self):
        """Broken invariants, as a list of short sentences (empty when all hold)."""
        p = self.pool
        out = []
        for b in range(p.num_blocks):
            if p.ref_cnt[b] < 0:
                out.append(f"block {b} has a negative ref_cnt")
            if (p.ref_cnt[b] == 0) != (b in p.free_queue):
                out.append(f"block {b}: ref_cnt {p.ref_cnt[b]} but {'in' if b in p.free_queue else 'not in'} free_queue")
            h = p.block_hash[b]
            if h is not None and p.hash_to_block.get(h) != b:
                out.append(f"block {b}: block_hash and hash_to_block disagree")
            if h is not None and h in self.hash_tag and tag(self.kv, b) != self.hash_tag[h]:
                out.append(f"block {b} does not hold the KV of the prefix it is registered for")
        for h, b in p.hash_to_block.items():
            if p.block_hash[b] != h:
                out.append(f"hash_to_block points at block {b}, which holds another prefix")
        if len(p.free_queue) != len(set(p.free_queue)):
            out.append("free_queue has duplicates")
        if len(p.host) > p.host_capacity:
            out.append("host holds more than host_capacity blocks")
        for h, entry in p.host.items():
            if h in self.hash_tag and host_tag(entry) != self.hash_tag[h]:
                out.append("a host copy does not hold the KV of its prefix")
        return out


def toks(start, n_blocks, extra=0):
    """n_blocks full blocks of distinct token ids starting at `start`, plus `extra` tokens."""
    return list(range(start, start + n_blocks * BS + extra))
