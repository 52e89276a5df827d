"""Helpers for the hidden tests: a pool driven the engine's way, what each block was computed
with, readable names for hashes, and the pool's invariants."""

from prefix_cache import PrefixCachingBlockPool


class World:
    def __init__(self, num_blocks, block_size):
        self.pool = PrefixCachingBlockPool(num_blocks, block_size)
        self.bs = block_size
        self.held = {}       # block id -> prefix (tuple of token ids) computed into it
        self.prefix_of = {}  # block hash -> the prefix it names
        self.names = {}      # block hash -> "X[i]"
        self.computed = 0

    def learn(self, tokens, label=None):
        for i, h in enumerate(self.pool.block_hashes(tokens)):
            self.prefix_of.setdefault(h, tuple(tokens[:(i + 1) * self.bs]))
            if label is not None:
                self.names.setdefault(h, f"{label}[{i}]")
        return tokens

    def run(self, tokens, lookup_all=True):
        """lookup (the whole prompt, or all but its last token as the engine does), touch,
        allocate the rest, compute, register; the block table or None."""
        pool = self.pool
        self.learn(tokens)
        hits = pool.lookup(tokens if lookup_all else tokens[:-1])
        pool.touch(hits)
        new = pool.allocate(-(-len(tokens) // self.bs) - len(hits))
        if new is None:
            pool.free(hits)
            return None
        table = list(hits) + list(new)
        for i in range(len(hits), len(table)):
            self.held[table[i]] = tuple(tokens[:(i + 1) * self.bs])
        self.computed += len(tokens) - len(hits) * self.bs
        pool.cache_blocks(tokens, table, len(tokens))
        return table

    def serve(self, tokens, lookup_all=True):
        table = self.run(tokens, lookup_all)
        if table is not None:
            self.pool.free(table)
        return table

    def right(self, blocks, tokens):
        return all(self.held.get(b) == tuple(tokens[:(i + 1) * self.bs]) for i, b in enumerate(blocks))

    def identities(self):
        return ["-" if h is None else self.names.get(h, "?") for h in self.pool.block_hash]

    def problems(self):
        """Broken invariants, as short sentences (empty when all hold)."""
        p = self.pool
        out = []
        if len(p.free_queue) != p.num_free():
            out.append("num_free() is not len(free_queue)")
        for b in p.free_queue:
            if not 0 <= b < p.num_blocks:
                out.append(f"free_queue holds {b!r}, which is not a block")
        for b in range(p.num_blocks):
            if p.ref_cnt[b] < 0:
                out.append(f"block {b} has a negative ref_cnt")
            if (p.ref_cnt[b] == 0) != (b in p.free_queue):
                where = "in" if b in p.free_queue else "not in"
                out.append(f"block {b}: ref_cnt {p.ref_cnt[b]} but {where} free_queue")
            h = p.block_hash[b]
            if h is not None:
                if p.hash_to_block.get(h) != b:
                    out.append(f"block {b}: block_hash and hash_to_block disagree")
                if h in self.prefix_of and self.held.get(b) != self.prefix_of[h]:
                    out.append(f"block {b} is registered for a prefix it does not hold")
        for h, b in p.hash_to_block.items():
            if not 0 <= b < p.num_blocks or p.block_hash[b] != h:
                out.append(f"hash_to_block points at block {b}, which holds another prefix")
        return out


def toks(start, n_blocks, bs, extra=0):
    """n_blocks full blocks of distinct token ids from `start`, plus `extra` tokens."""
    return list(range(start, start + n_blocks * bs + extra))
