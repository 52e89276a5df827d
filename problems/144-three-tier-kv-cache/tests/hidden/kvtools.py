"""Helpers for the hidden tests: a real (torch) paged KV cache filled with recognisable patterns,
real safetensors files in a temporary folder, the engine's prompt handling, and the pool's
invariants across the three tiers.

Block content number `tag` at layer `l` holds `tag*1000 + l*100 + i` (i = 0, 1, ... over the
block's elements) in K and the negatives in V.
"""

import functools
import os

import torch
from kv_cache import KVCache
from three_tier import ThreeTierPrefixCachingBlockPool

BS = 4


def make_kv(num_blocks, num_layers=2):
    return KVCache(num_layers=num_layers, num_blocks=num_blocks, block_size=BS, num_kv_heads=2, head_dim=2)


@functools.lru_cache(maxsize=None)
def _pattern(numel, tag, layer, sign):
    return [float(sign * (tag * 1000 + layer * 100 + i)) for i in range(numel)]


def write(kv, block, tag):
    for layer in range(len(kv.k)):
        for cache, sign in ((kv.k, 1), (kv.v, -1)):
            t = cache[layer][block]
            t.copy_(torch.tensor(_pattern(t.numel(), tag, layer, sign)).reshape(t.shape))


def tag_of_tensors(ks, vs):
    # Plain lists: comparing tiny tensors op by op costs far more than the pool's own work.
    ks = [k.detach().to("cpu").flatten().tolist() for k in ks]
    vs = [v.detach().to("cpu").flatten().tolist() for v in vs]
    if not any(ks[0]):
        return "empty"
    tag = int(ks[0][0]) // 1000
    for layer, (k, v) in enumerate(zip(ks, vs)):
        if k != _pattern(len(k), tag, layer, 1) or v != _pattern(len(v), tag, layer, -1):
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


def file_name(h):
    return f"{h:016x}.safetensors"


def read_file(path, num_layers):
    """The file read with safetensors itself: (tensor names, content number)."""
    from safetensors.torch import load_file

    try:
        tensors = load_file(path)
    except Exception as exc:  # noqa: BLE001 - the observed value says what went wrong
        return [], f"unreadable ({type(exc).__name__})"
    names = sorted(tensors)
    try:
        content = tag_of_tensors([tensors[f"k.{l}"] for l in range(num_layers)],
                                 [tensors[f"v.{l}"] for l in range(num_layers)])
    except Exception as exc:  # noqa: BLE001
        content = f"unreadable ({type(exc).__name__})"
    return names, content


class Contents:
    """Content number per distinct prefix, in order of first use."""

    def __init__(self):
        self.tags = {}

    def of(self, prefix):
        return self.tags.setdefault(tuple(prefix), len(self.tags) + 1)


class World:
    """A pool with its KV cache and disk folder, and the bookkeeping the tests judge it by."""

    def __init__(self, tmp_path, num_blocks, host, disk, policy="write_back", num_layers=2, folder="disk"):
        self.disk_dir = str(tmp_path / folder)
        self.pool = ThreeTierPrefixCachingBlockPool(num_blocks, BS, host, self.disk_dir, disk, policy)
        self.kv = make_kv(num_blocks, num_layers)
        self.num_layers = num_layers
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
        blocks = self.run(tokens)
        self.release(blocks, head_first)
        return blocks

    def release(self, blocks, head_first=False):
        if blocks is not None:
            self.pool.free(list(reversed(blocks)) if head_first else list(blocks))

    # -- what the tests observe ------------------------------------------------------------------

    def host_keys(self):
        return [self.names.get(h, "?") for h in self.pool.host]

    def disk_keys(self):
        return [self.names.get(h, "?") for h in self.pool.disk]

    def files(self):
        """The disk folder's files by block name (unknown names as they are), sorted."""
        by_file = {file_name(h): n for h, n in self.names.items()}
        if not os.path.isdir(self.disk_dir):
            return ["(no folder)"]
        return sorted(by_file.get(f, f) for f in os.listdir(self.disk_dir))

    def file_tags(self):
        """{block name: content number its file holds}, for the files of known names."""
        out = {}
        for h, n in self.names.items():
            path = os.path.join(self.disk_dir, file_name(h))
            if os.path.exists(path):
                out[n] = read_file(path, self.num_layers)[1]
        return out

    def tiers(self):
        return [self.host_keys(), self.disk_keys(), self.files()]

    def tags(self, blocks):
        return [tag(self.kv, b) for b in blocks]

    def expected_tags(self, tokens, n):
        return [self.contents.of(tokens[:(i + 1) * BS]) for i in range(n)]

    def copies(self):
        p = self.pool
        return [p.num_host_writes, p.num_disk_writes, p.num_loaded_from_host, p.num_loaded_from_disk]

    def hits(self):
        p = self.pool
        return [p.num_gpu_hits, p.num_host_hits, p.num_disk_hits, p.num_hits, p.num_queries]

    def counters(self):
        return self.hits() + self.copies()

    def problems(self, files=True):
        """Broken invariants, as short sentences (empty when all hold). `files=False` skips
        reading every file's contents (the names are always compared)."""
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
        if len(p.disk) > p.disk_capacity:
            out.append("disk holds more than disk_capacity blocks")
        for h, entry in p.host.items():
            if h in self.hash_tag and host_tag(entry) != self.hash_tag[h]:
                out.append("a host copy does not hold the KV of its prefix")
        on_disk = set(os.listdir(self.disk_dir)) if os.path.isdir(self.disk_dir) else set()
        if on_disk != {file_name(h) for h in p.disk}:
            out.append("the files in the disk folder are not those of the disk tier's keys")
        if files:
            for h in p.disk:
                path = os.path.join(self.disk_dir, file_name(h))
                if h in self.hash_tag and os.path.exists(path) and \
                        read_file(path, self.num_layers)[1] != self.hash_tag[h]:
                    out.append("a disk file does not hold the KV of its prefix")
        return out


def toks(start, n_blocks, extra=0):
    """n_blocks full blocks of distinct token ids starting at `start`, plus `extra` tokens."""
    return list(range(start, start + n_blocks * BS + extra))
