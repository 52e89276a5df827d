# Another way to name a block: a digest of the whole prefix up to its end, grown incrementally
# with one running sha256, instead of a chain of per-block hashes. Equal names still mean equal
# prefixes from the first token on, which is all the pool needs.
import hashlib
import itertools
from collections import OrderedDict

from paged import BlockPool


class PrefixCachingBlockPool(BlockPool):
    enable_caching = True

    def __init__(self, num_blocks: int, block_size: int):
        super().__init__(num_blocks)
        self.block_size = block_size
        self.free_queue = OrderedDict.fromkeys(range(num_blocks))
        self.block_hash = [None] * num_blocks
        self.hash_to_block = {}
        self.num_queries = self.num_hits = 0

    def block_hashes(self, token_ids):
        running = hashlib.sha256()
        names = []
        bs = self.block_size
        for start in range(0, len(token_ids) // bs * bs, bs):
            for t in token_ids[start:start + bs]:
                running.update(int(t).to_bytes(8, "little", signed=True))
            names.append(running.hexdigest()[:24])
        return names

    def _forget(self, b):
        name = self.block_hash[b]
        if name is not None and self.hash_to_block.get(name) == b:
            del self.hash_to_block[name]
        self.block_hash[b] = None

    def allocate(self, n):
        if len(self.free_queue) < n:
            return None
        taken = list(itertools.islice(self.free_queue, n))
        for b in taken:
            del self.free_queue[b]
            self._forget(b)
            self.ref_cnt[b] = 1
        return taken

    def free(self, blocks):
        blocks = list(blocks)
        while blocks:
            b = blocks.pop()
            self.ref_cnt[b] -= 1
            if not self.ref_cnt[b]:
                self.free_queue[b] = None

    def touch(self, blocks):
        for b in blocks:
            self.free_queue.pop(b, None)
            self.ref_cnt[b] += 1

    def lookup(self, token_ids):
        found = list(itertools.takewhile(lambda b: b is not None,
                                         (self.hash_to_block.get(h) for h in self.block_hashes(token_ids))))
        self.num_queries += len(token_ids)
        self.num_hits += len(found) * self.block_size
        return found

    def cache_blocks(self, token_ids, block_ids, num_computed):
        for b, name in zip(block_ids, self.block_hashes(token_ids[:num_computed])):
            if self.block_hash[b] is None and name not in self.hash_to_block:
                self.block_hash[b] = name
                self.hash_to_block[name] = b
