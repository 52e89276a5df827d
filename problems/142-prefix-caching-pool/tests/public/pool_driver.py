"""What the engine does with a prefix-caching pool, without a model: the public tests drive your
pool through these helpers (pure Python, so they run in the browser too).

There is no KV here. Instead the driver remembers, for every block it "computes", which prefix of
which prompt it computed into it (`Driver.held[block]`, a tuple of token ids). A block returned by
`lookup` is right when it holds exactly the prefix the lookup asked for, up to that block.
"""


try:  # inside the judge: the pool's calls become a timeline shown beside the reference's
    from judge_runner.trace import name_prompts, traced
except ImportError:  # anywhere else: the pool itself
    def traced(pool, **how):
        return pool

    def name_prompts(pool, prompts, hash_names=None):
        pass


def trace_pool(pool):
    """The pool, recording each call the test makes for the judge's timeline."""
    return traced(pool, counters=["num_queries", "num_hits"])


class Driver:
    def __init__(self, pool):
        self.pool = pool
        self.bs = pool.block_size
        self.held = {}           # block id -> the prefix (tuple of token ids) computed into it
        self.computed = 0        # tokens computed so far, over every prompt served

    def run(self, tokens):
        """A prompt arrives: look up its cached prefix, take those blocks, allocate the rest,
        "compute" the new blocks and register the full ones, as the engine does after a step.

        Returns the block table, or None (nothing kept) when too few blocks are free.
        (The engine looks up `tokens[:-1]`, so that the last token is always computed; these
        tests look up the whole prompt, which makes the examples easier to follow.)
        """
        pool = self.pool
        hits = pool.lookup(tokens)
        pool.touch(hits)
        need = -(-len(tokens) // self.bs) - len(hits)
        new = pool.allocate(need)
        if new is None:
            pool.free(hits)
            return None
        table = list(hits) + list(new)
        for i in range(len(hits), len(table)):
            self.held[table[i]] = tuple(tokens[:(i + 1) * self.bs])
        self.computed += len(tokens) - len(hits) * self.bs
        pool.cache_blocks(tokens, table, len(tokens))
        return table

    def release(self, table):
        """The request is finished: its block table goes back as it is (the pool decides the
        order). Nothing happens when it never got blocks."""
        if table is not None:
            self.pool.free(table)

    def serve(self, tokens):
        """Serve a prompt and finish it at once; its block table (or None)."""
        table = self.run(tokens)
        self.release(table)
        return table

    def hold_right_prefixes(self, blocks, tokens):
        """Whether block i of `blocks` holds the first i+1 blocks of `tokens`, for every i."""
        return all(self.held.get(b) == tuple(tokens[:(i + 1) * self.bs]) for i, b in enumerate(blocks))


def names_of_hashes(pool, prompts):
    """hash -> a readable name such as "A[1]" (block 1 of prompt A), from your own block_hashes."""
    names = {}
    for name, tokens in prompts.items():
        for i, h in enumerate(pool.block_hashes(tokens)):
            names.setdefault(h, f"{name}[{i}]")
    name_prompts(pool, prompts, names)
    return names


def cached(pool, names):
    """The cache's contents in words: {"A[0]": block id, ...}, sorted by name."""
    return {names.get(h, "?"): b for h, b in sorted(pool.hash_to_block.items(), key=lambda kv: names.get(kv[0], "?"))}


def identities(pool, names):
    """What each block holds, by name ("-" for a block without a hash)."""
    return ["-" if h is None else names.get(h, "?") for h in pool.block_hash]
