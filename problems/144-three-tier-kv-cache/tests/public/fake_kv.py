"""A pure-Python stand-in for the engine's KV cache and for safetensors, so the public tests run
without torch (in the browser too, whose in-memory file system holds the disk tier's files).

`FakeKV(num_layers, num_blocks)` has `k[layer][block]` and `v[layer][block]` like `engine.kv`.
Each is a `FakeTensor`, a short list of numbers that behaves like one block of a real tensor for
what a pool does with it: indexing gives the block itself (a view), `clone()` an independent copy,
`dst.copy_(src)` overwrites `dst` in place.

`save_file(tensors, path)` and `load_file(path)` have safetensors' signatures and write one JSON
object per file ({"k.0": [numbers], "v.0": [...], ...}). `use_fake_files(pool)` puts them on a
pool in place of its safetensors defaults.

The tests write a recognisable pattern into each block they "compute": content number `tag`
(1, 2, 3, ...) at layer `l` holds `tag*100 + l*10 + i` in K and the negatives in V; `tag_of`
functions read the number back ("empty" if nothing was written, "garbled" if the numbers are not
one consistent pattern).
"""

import json
import os
import re

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
    return traced(pool, counters=["num_queries", "num_hits", "num_gpu_hits", "num_host_hits",
                                  "num_disk_hits", "num_host_writes", "num_disk_writes",
                                  "num_loaded_from_host", "num_loaded_from_disk"],
                  tiers=["host", "disk"])


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
            raise ValueError("copy_: the source must be a FakeTensor of the same shape")
        self.values[:] = src.values
        return self

    # As torch does on the CPU, these return the same storage, not a copy.
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


# ---- the file format ------------------------------------------------------------------------

_NAME = re.compile(r"^[kv]\.(\d+)$")


def save_file(tensors, path):
    """Like `safetensors.torch.save_file`: one file holding named tensors. The names must be
    `k.0`, `v.0`, `k.1`, `v.1`, ... (one K and one V per layer), as the statement requires."""
    if not isinstance(tensors, dict) or not tensors:
        raise ValueError(f"save_file: expected a dict of named tensors, got {type(tensors).__name__}")
    layers = set()
    for name, t in tensors.items():
        m = _NAME.match(name) if isinstance(name, str) else None
        if m is None:
            raise ValueError(f"save_file: tensor name {name!r} is not 'k.<layer>' or 'v.<layer>'")
        if not isinstance(t, FakeTensor):
            raise ValueError(f"save_file: {name!r} is a {type(t).__name__}, not a tensor")
        layers.add(int(m.group(1)))
    want = {f"{kind}.{layer}" for layer in range(len(layers)) for kind in "kv"}
    if set(tensors) != want:
        raise ValueError(f"save_file: expected the names {sorted(want)}, got {sorted(tensors)}")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({name: t.values for name, t in tensors.items()}, f)


def load_file(path):
    """Like `safetensors.torch.load_file`: {name: tensor} read from `path`."""
    with open(path, encoding="utf-8") as f:
        return {name: FakeTensor(values) for name, values in json.load(f).items()}


def use_fake_files(pool):
    pool.save_file = save_file
    pool.load_file = load_file


def file_name(h):
    """The disk tier's file for block hash `h`."""
    return f"{h:016x}.safetensors"


# ---- contents -------------------------------------------------------------------------------

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
    """The content number one `host` entry (a per-layer list of (K, V) copies) holds."""
    return tag_of_tensors([k for k, _ in entry], [v for _, v in entry])


def file_tag(path):
    """The content number the file at `path` holds, read with the fake `load_file`."""
    try:
        tensors = load_file(path)
        n = len(tensors) // 2
        return tag_of_tensors([tensors[f"k.{l}"] for l in range(n)], [tensors[f"v.{l}"] for l in range(n)])
    except Exception as exc:  # noqa: BLE001 - shown to the student as the observed value
        return f"unreadable ({type(exc).__name__})"


class Contents:
    """Gives each distinct prefix (a tuple of token ids) its own content number, in order of first
    use: the KV a real model computes for a block depends on the whole prefix up to that block."""

    def __init__(self):
        self.tags = {}

    def of(self, prefix):
        return self.tags.setdefault(tuple(prefix), len(self.tags) + 1)


# ---- the engine's side ----------------------------------------------------------------------

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
    the last block first); `head_first` passes it reversed. Nothing happens for None."""
    if blocks is not None:
        pool.free(list(reversed(blocks)) if head_first else list(blocks))


def serve(pool, kv, contents, tokens, head_first=False):
    """Serve a prompt and finish it at once. Returns its block table, or None if it did not fit."""
    blocks = run_prompt(pool, kv, contents, tokens)
    release(pool, blocks, head_first)
    return blocks


class Names:
    """Readable names such as "A[1]" (prompt A, its block 1) for block hashes and disk files."""

    def __init__(self, pool, prompts):
        self.pool = pool
        self.of_hash = {}
        for name, tokens in prompts.items():
            for i, h in enumerate(pool.block_hashes(tokens)):
                self.of_hash.setdefault(h, f"{name}[{i}]")
        self.of_file = {file_name(h): n for h, n in self.of_hash.items()}
        name_prompts(pool, prompts, self.of_hash)

    def host(self):
        """The keys of `host`, least recently used first."""
        return [self.of_hash.get(h, "?") for h in self.pool.host]

    def disk(self):
        """The keys of `disk`, least recently used first."""
        return [self.of_hash.get(h, "?") for h in self.pool.disk]

    def files(self):
        """The files in the disk folder, by name (a file of an unknown name as it is), sorted."""
        return sorted(self.of_file.get(f, f) for f in os.listdir(self.pool.disk_dir))

    def file_tags(self):
        """{block name: content number its file holds}, for every file of a known name."""
        return {self.of_file[f]: file_tag(os.path.join(self.pool.disk_dir, f))
                for f in sorted(os.listdir(self.pool.disk_dir)) if f in self.of_file}
