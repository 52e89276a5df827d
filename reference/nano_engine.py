"""A small serving engine: continuous batching over a paged KV cache, with prefix caching.

One `step()` is either a prefill step (admit waiting requests and compute their prompts) or a
decode step (one new token for every running request). The pieces, each a small class:

- `Sequence`: one request's tokens, its block table and how many of its tokens have KV in cache;
- `Scheduler`: who runs this step; admission only when a request's blocks fit, preemption by
  recompute when a decode step runs out of blocks;
- `LLMEngine`: owns the model, the KV cache and the block pool, runs steps, samples tokens and
  records `step_log`.

The pool decides what is cached. With a caching pool (`pool.enable_caching`), before admitting a
request the scheduler asks `pool.lookup(tokens[:-1])` for the blocks of its longest cached prefix
(never the last token: its logits are needed, so it is always computed), `touch`es them and
`allocate`s the rest. After each step the engine tells the pool which full blocks now hold computed
KV: `pool.cache_blocks(token_ids, block_table, num_computed)`. A finished or preempted request's
block table goes back with `pool.free(block_table)`, as it is: the pool decides the order (the
prefix-caching pool releases the tail first). These calls are the handbook's, so a student's pool
written against the chapter drops in unchanged.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass

import torch

from kv_cache import AttentionMetadata
from paged import BlockPool

__all__ = ["SamplingParams", "Sequence", "Scheduler", "LLMEngine"]


@dataclass
class SamplingParams:
    max_tokens: int = 16
    temperature: float = 0.0  # 0 means greedy
    seed: int | None = None
    ignore_eos: bool = False

    def __post_init__(self):
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")


class Sequence:
    _ids = itertools.count()

    def __init__(self, prompt: list[int], params: SamplingParams):
        if not prompt:
            raise ValueError("a prompt needs at least one token")
        self.seq_id = next(Sequence._ids)
        self.token_ids = list(prompt)
        self.num_prompt_tokens = len(prompt)
        self.params = params
        self.block_table: list[int] = []
        self.num_computed_tokens = 0  # tokens whose KV is in the cache
        self.finished = False
        self.generator = None
        if params.temperature > 0:
            self.generator = torch.Generator().manual_seed(
                params.seed if params.seed is not None else torch.seed())

    @property
    def output_ids(self) -> list[int]:
        return self.token_ids[self.num_prompt_tokens:]

    def blocks_needed(self, num_tokens: int, block_size: int) -> int:
        return -(-num_tokens // block_size) - len(self.block_table)


@dataclass
class ScheduledBatch:
    seqs: list[Sequence]
    num_new_tokens: list[int]
    is_prefill: bool
    num_cached_tokens: int = 0
    num_preempted: int = 0


class Scheduler:
    def __init__(self, pool: BlockPool, block_size: int, max_num_seqs: int, max_num_batched_tokens: int):
        self.pool = pool
        self.block_size = block_size
        self.caching = bool(getattr(pool, "enable_caching", False))
        self.max_num_seqs = max_num_seqs
        self.max_num_batched_tokens = max_num_batched_tokens
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []

    def add(self, seq: Sequence) -> None:
        needed = -(-(seq.num_prompt_tokens + seq.params.max_tokens) // self.block_size)
        if needed > self.pool.num_blocks:
            raise ValueError(f"a request of {seq.num_prompt_tokens} + {seq.params.max_tokens} tokens "
                             f"needs {needed} blocks; the pool has {self.pool.num_blocks}")
        self.waiting.append(seq)

    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def schedule(self) -> ScheduledBatch:
        batch = self._admit()
        return batch if batch.seqs else self._decode()

    def _admit(self) -> ScheduledBatch:
        batch = ScheduledBatch([], [], is_prefill=True)
        budget = self.max_num_batched_tokens
        while self.waiting and len(self.running) < self.max_num_seqs:
            seq = self.waiting[0]
            cached = self.pool.lookup(seq.token_ids[:-1]) if self.caching else []
            num_new = len(seq.token_ids) - len(cached) * self.block_size
            if batch.seqs and num_new > budget:
                break
            # Cached blocks that are free leave the free queue when touched: count them as taken.
            newly_taken = sum(1 for b in cached if self.pool.ref_cnt[b] == 0)
            to_allocate = seq.blocks_needed(len(seq.token_ids), self.block_size) - len(cached)
            if to_allocate + newly_taken > self.pool.num_free():
                break
            if cached:
                self.pool.touch(cached)
            fresh = self.pool.allocate(to_allocate)
            assert fresh is not None
            seq.block_table = cached + fresh
            seq.num_computed_tokens = len(cached) * self.block_size
            self.waiting.popleft()
            self.running.append(seq)
            batch.seqs.append(seq)
            batch.num_new_tokens.append(num_new)
            batch.num_cached_tokens += seq.num_computed_tokens
            budget -= num_new
        return batch

    def _decode(self) -> ScheduledBatch:
        batch = ScheduledBatch([], [], is_prefill=False)
        queue = list(self.running)
        while queue:
            seq = queue.pop(0)
            if seq.blocks_needed(len(seq.token_ids), self.block_size) > 0:
                while self.pool.num_free() == 0 and queue:
                    self._preempt(queue.pop())  # the newest request gives way
                    batch.num_preempted += 1
                if self.pool.num_free() == 0:
                    self._preempt(seq)
                    batch.num_preempted += 1
                    continue
                seq.block_table += self.pool.allocate(1)
            batch.seqs.append(seq)
            batch.num_new_tokens.append(1)
        return batch

    def _preempt(self, seq: Sequence) -> None:
        """Drop a running request's KV; it goes back to the front of the queue and is recomputed
        (through the prefix cache, so the blocks it still has cached are found again)."""
        self.running.remove(seq)
        self.pool.free(seq.block_table)
        seq.block_table = []
        seq.num_computed_tokens = 0
        self.waiting.appendleft(seq)

    def finish(self, seq: Sequence) -> None:
        seq.finished = True
        self.running.remove(seq)
        self.pool.free(seq.block_table)


class LLMEngine:
    """`LLMEngine(model, eos_token_id, pool=None, num_blocks=..., block_size=16)`.

    `pool=None` gives a plain `BlockPool` (no caching) of `num_blocks` blocks; a pool passed in
    brings its own `num_blocks` and `block_size`. The KV cache is `engine.kv` (`kv.k[layer][block]`).
    """

    def __init__(self, model, eos_token_id: int | None = None, pool: BlockPool | None = None,
                 num_blocks: int | None = None, block_size: int = 16, max_num_seqs: int = 64,
                 max_num_batched_tokens: int = 4096):
        if pool is None:
            pool = BlockPool(num_blocks or 256)
        elif num_blocks is not None and num_blocks != pool.num_blocks:
            raise ValueError(f"num_blocks={num_blocks} but the pool has {pool.num_blocks} blocks")
        self.model = model
        self.eos_token_id = eos_token_id
        self.pool = pool
        # A caching pool hashes blocks of its own size, so it decides; a plain pool has no size.
        self.block_size = getattr(pool, "block_size", block_size)
        self.kv = model.new_kv_cache(pool.num_blocks, self.block_size)
        self.scheduler = Scheduler(pool, self.block_size, max_num_seqs, max_num_batched_tokens)
        self.step_log: list[dict] = []

    def add_request(self, prompt: list[int], params: SamplingParams) -> Sequence:
        seq = Sequence(prompt, params)
        self.scheduler.add(seq)
        return seq

    @torch.inference_mode()
    def step(self) -> list[Sequence]:
        """Run one step; return the requests that finished in it."""
        batch = self.scheduler.schedule()
        if not batch.seqs:
            raise RuntimeError("no request can run: the pool is too small for the waiting request")
        device = self.model.device
        ids, positions = [], []
        for seq, n in zip(batch.seqs, batch.num_new_tokens):
            start = seq.num_computed_tokens
            ids += seq.token_ids[start:start + n]
            positions += range(start, start + n)
        meta = AttentionMetadata.build(
            batch.num_new_tokens, [s.num_computed_tokens + n for s, n in zip(batch.seqs, batch.num_new_tokens)],
            [s.block_table for s in batch.seqs], self.block_size, device)
        hidden = self.model(torch.tensor(ids, dtype=torch.long, device=device),
                            torch.tensor(positions, dtype=torch.long, device=device), self.kv, meta)
        last = torch.tensor(list(itertools.accumulate(batch.num_new_tokens)), device=device) - 1
        logits = self.model.compute_logits(hidden[last]).float()

        finished = []
        for seq, n, row in zip(batch.seqs, batch.num_new_tokens, logits):
            seq.num_computed_tokens += n
            if self.scheduler.caching:
                self.pool.cache_blocks(seq.token_ids, seq.block_table, seq.num_computed_tokens)
            token = self._sample(row, seq)
            seq.token_ids.append(token)
            done = len(seq.output_ids) >= seq.params.max_tokens or (
                not seq.params.ignore_eos and token == self.eos_token_id)
            if done:
                self.scheduler.finish(seq)
                finished.append(seq)

        num_tokens = sum(batch.num_new_tokens)
        self.step_log.append({
            "step": len(self.step_log),
            "kind": "prefill" if batch.is_prefill else "decode",
            "num_seqs": len(batch.seqs),
            "num_tokens": num_tokens,
            "num_prefill_tokens": num_tokens if batch.is_prefill else 0,
            "num_decode_tokens": 0 if batch.is_prefill else num_tokens,
            "num_cached_tokens": batch.num_cached_tokens,
            "num_preempted": batch.num_preempted,
            "free_blocks": self.pool.num_free(),
        })
        return finished

    def _sample(self, logits: torch.Tensor, seq: Sequence) -> int:
        if seq.params.temperature == 0:
            return int(torch.argmax(logits))
        probs = torch.softmax(logits / seq.params.temperature, dim=-1).cpu()
        return int(torch.multinomial(probs, 1, generator=seq.generator))

    def generate(self, prompts: list[list[int]], params: SamplingParams | list[SamplingParams]) -> list[list[int]]:
        """Run the prompts to completion together; the generated token ids of each, in order."""
        if isinstance(params, SamplingParams):
            params = [params] * len(prompts)
        seqs = [self.add_request(p, sp) for p, sp in zip(prompts, params)]
        while self.scheduler.has_work():
            self.step()
        return [s.output_ids for s in seqs]

    @property
    def num_computed_tokens(self) -> int:
        """Tokens computed over the engine's life (the experiment's cost measure)."""
        return sum(s["num_tokens"] for s in self.step_log)
