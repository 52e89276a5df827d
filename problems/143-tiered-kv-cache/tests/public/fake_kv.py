"""A pure-Python stand-in for the engine's KV cache, so the public tests run without torch
(in the browser too).

`FakeKV(num_layers, num_blocks)` has `k[layer][block]` and `v[layer][block]` like `engine.kv`.
Each of those is a `FakeTensor`: a small list of numbers that behaves like one block of a real
tensor for the operations a pool needs. Indexing gives the block itself (a view: writing into the
block later changes what you hold), `clone()` gives an independent copy, and `dst.copy_(src)`
overwrites `dst` in place.

The tests write a recognisable pattern into each block they "compute": block content number
`tag` (1, 2, 3, ...) at layer `l` holds `tag*100 + l*10 + i` in K and the negatives in V.
`FakeKV.tag(block)` reads the number back ("empty" if nothing was written, "garbled" if the block
holds no consistent pattern).
"""

BLOCK_NUMEL = 4

try:  # inside the judge: the pool's calls become a timeline shown beside the reference's
    from judge_runner.trace import name_prompts, traced
except ImportError:  # anywhere else: the pool itself
    def traced(pool, **how):
        return pool

    def name_prompts(pool, prompts, hash_names=None):
        pass


def trace_pool(pool):
    """The pool, recording each call the test makes for the judge's timeline."""
    return traced(pool, counters=["num_queries", "num_hits", "num_offloaded", "num_loaded"],
                  tiers=["host"])


class FakeTensor:
    is_cuda = False
    device = "cpu"
    dtype = "float32"

    def __init__(self, values):
        self.values = list(values)

    @property
    def shape(self):
        return (len(self.values),)

    def numel(self):
        return len(self.values)

    def clone(self):
        return FakeTensor(self.values)

    def copy_(self, src, non_blocking=False):
        if not isinstance(src, FakeTensor) or len(src.values) != len(self.values):
            raise ValueError("copy_: source must be a FakeTensor of the same shape")
        self.values[:] = src.values
        return self

    # Like torch on the CPU: these give the same storage back, not a copy.
    def detach(self):
        return self

    def cpu(self):
        return self

    def contiguous(self):
        return self

    def to(self, *args, copy=False, **kwargs):
        return self.clone() if copy else self

    def pin_memory(self):
        return self.clone()

    def is_pinned(self):
        return False

    def tolist(self):
        return list(self.values)

    def equal(self, other):
        return isinstance(other, FakeTensor) and self.values == other.values

    def __eq__(self, other):
        return self.equal(other)

    __hash__ = None

    def __repr__(self):
        return f"FakeTensor({self.values})"


def pattern(tag, layer, sign):
    return [sign * (tag * 100 + layer * 10 + i) for i in range(BLOCK_NUMEL)]


def tag_of_tensors(ks, vs):
    """The content number held by per-layer K and V tensors, or "empty" / "garbled"."""
    first = ks[0].values
    if all(x == 0 for x in first):
        return "empty"
    tag = first[0] // 100
    for layer, (k, v) in enumerate(zip(ks, vs)):
        if k.values != pattern(tag, layer, 1) or v.values != pattern(tag, layer, -1):
            return "garbled"
    return tag


class FakeKV:
    def __init__(self, num_layers, num_blocks):
        self.num_layers = num_layers
        self.num_blocks = num_blocks
        self.k = [[FakeTensor([0] * BLOCK_NUMEL) for _ in range(num_blocks)] for _ in range(num_layers)]
        self.v = [[FakeTensor([0] * BLOCK_NUMEL) for _ in range(num_blocks)] for _ in range(num_layers)]

    def write(self, block, tag):
        """Fill `block` (every layer) with content number `tag`, in place."""
        for layer in range(self.num_layers):
            self.k[layer][block].values[:] = pattern(tag, layer, 1)
            self.v[layer][block].values[:] = pattern(tag, layer, -1)

    def tag(self, block):
        return tag_of_tensors([self.k[l][block] for l in range(self.num_layers)],
                              [self.v[l][block] for l in range(self.num_layers)])


def host_copy_tag(entry):
    """The content number held by one `host` entry (a per-layer list of (K, V) copies)."""
    return tag_of_tensors([k for k, _ in entry], [v for _, v in entry])


class Contents:
    """Gives each distinct prefix (a tuple of token ids) its own content number, in order of first
    use: the KV a real model computes for a block depends on the whole prefix up to that block."""

    def __init__(self):
        self.tags = {}

    def of(self, prefix):
        return self.tags.setdefault(tuple(prefix), len(self.tags) + 1)


def run_prompt(pool, kv, contents, tokens):
    """What the engine does when a prompt arrives: look up the cached prefix, take those blocks,
    allocate the rest, "compute" the KV of the new blocks and register the full ones.

    Returns the prompt's block table, or None (nothing held) if the pool has too few free blocks.
    """
    bs = pool.block_size
    hits = pool.lookup(tokens)
    pool.touch(hits)
    need = -(-len(tokens) // bs) - len(hits)
    new = pool.allocate(need)
    if new is None:
        pool.free(hits)
        return None
    blocks = list(hits) + list(new)
    for i in range(len(hits), len(blocks)):
        kv.write(blocks[i], contents.of(tokens[:(i + 1) * bs]))
    pool.cache_blocks(tokens, blocks, len(tokens))
    return blocks


def release(pool, blocks, head_first=False):
    """Finish a request: `free` its block table as the engine does, as it is (the pool releases
    the last block first). `head_first` passes the table reversed, so the first block is released
    first and the tail stays cached longest. Nothing happens if it never got any blocks."""
    if blocks is not None:
        pool.free(list(reversed(blocks)) if head_first else list(blocks))


def serve(pool, kv, contents, tokens, head_first=False):
    """Serve a prompt and finish it at once (see `release`). Returns its block table, or None if
    it did not fit."""
    blocks = run_prompt(pool, kv, contents, tokens)
    release(pool, blocks, head_first)
    return blocks


def names_of_hashes(pool, prompts):
    """hash -> a readable name such as "A[1]" (prompt A, its block 1), for the given prompts."""
    names = {}
    for name, tokens in prompts.items():
        for i, h in enumerate(pool.block_hashes(tokens)):
            names.setdefault(h, f"{name}[{i}]")
    name_prompts(pool, prompts, names)
    return names
