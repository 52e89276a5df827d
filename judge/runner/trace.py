"""A timeline of what a test did to a block pool: each call, its result and the pool's state
after it, written as ``trace`` events (events.py). The judge sets the submission's timeline
beside the reference's when a public test fails and shows where the two first differ.

The public tests' helper modules wrap each pool they build, and name the prompts they use::

    pool = traced(TieredPrefixCachingBlockPool(4, 4, 2), counters=["num_hits"], tiers=["host"])
    name_prompts(pool, {"A": a_tokens}, hash_names)   # blocks of A then read "A[0]", "A[1]"

`traced` returns a stand-in that forwards every attribute to the pool and records the calls in
``ops`` made through it (not the calls the pool makes to itself). The state is read by duck
typing, with the reference's names (``free_queue``, ``ref_cnt``, ``block_hash`` or
``hash_to_block``, the tier attributes, the counters); a value that cannot be read is recorded
as ``"<unreadable: TypeError>"`` and never fails the test. To label blocks the stand-in calls the
pool's own ``block_hashes`` once per prompt it has not hashed yet, as the tests' helpers do.

Outside a test of the judge's runner (imported elsewhere, or between tests) nothing is written.
Bounds: at most ``MAX_STEPS`` steps per test and ``MAX_STEP_BYTES`` of JSON per step (a bigger
state is replaced by ``{"cut": "<n> bytes"}``); sequences are read up to ``MAX_ITEMS`` items.
"""

from __future__ import annotations

import itertools
import json

from .plugin import S

MAX_STEPS = 500
MAX_STEP_BYTES = 16 * 1024
MAX_ITEMS = 4096
MAX_TEXT = 200
POOL_OPS = ("lookup", "allocate", "free", "touch", "cache_blocks")
PARAMS = {"lookup": ("tokens",), "allocate": ("n",), "free": ("blocks",), "touch": ("blocks",),
          "cache_blocks": ("tokens", "blocks", "num_computed"), "access": ("h",)}


class _TestTrace:
    """Step and pool numbering of the running test."""

    def __init__(self, name: str, run: tuple):
        self.name, self.run, self.steps, self.pools, self.unnamed = name, run, 0, 0, 0


_test: _TestTrace | None = None


def _running() -> _TestTrace | None:
    global _test
    name = getattr(S, "current", None)
    if name is None or getattr(S, "writer", None) is None:
        return None
    # a test run again in the same process (the page's Run, twice) starts its numbering afresh
    run = (name, getattr(S, "started_at", None), getattr(S, "count", None))
    if _test is None or _test.run != run:
        _test = _TestTrace(name, run)
    return _test


def _short(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 4] + " ..."


def plain(value, depth: int = 0):
    """`value` as JSON data: containers as lists and dicts (cut at MAX_ITEMS), anything else as
    a short repr (a default repr names a memory address, which differs between two runs)."""
    if value is None or isinstance(value, (bool, str)):
        return value if not isinstance(value, str) else _short(value)
    if isinstance(value, (int, float)):
        return value
    if depth > 8:
        return "..."
    if isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in itertools.islice(value, MAX_ITEMS)]
    if isinstance(value, dict):
        items = itertools.islice(value.items(), MAX_ITEMS)
        return {k if isinstance(k, str) else repr(k): plain(v, depth + 1) for k, v in items}
    if hasattr(value, "__index__"):
        return int(value.__index__())
    text = _short(repr(value))
    return type(value).__qualname__ if " at 0x" in text else text


def _read(fn):
    try:
        return fn()
    except Exception as exc:  # the pool's own structures: never the test's failure
        return f"<unreadable: {type(exc).__name__}>"


def _items(value) -> list:
    return list(itertools.islice(iter(value), MAX_ITEMS))


class _PoolTrace:
    def __init__(self, pool, number: int, ops, counters, tiers, levels):
        self.pool, self.number, self.ops = pool, number, tuple(ops)
        self.counters, self.tiers, self.levels = list(counters), list(tiers), dict(levels or {})
        self.prompts: list[tuple[str, tuple]] = []   # (name, tokens) in the order named
        self.unhashed: list[tuple[str, tuple]] = []
        self.hash_names: dict = {}

    # -- names ---------------------------------------------------------------------------------

    def name_prompts(self, prompts: dict, hash_names: dict | None) -> None:
        for name, tokens in prompts.items():
            entry = (str(name), tuple(tokens))
            self.prompts.append(entry)
            if hash_names is None:
                self.unhashed.append(entry)
        for h, label in (hash_names or {}).items():
            self.hash_names.setdefault(h, str(label))

    def token_labels(self, tokens, test: _TestTrace) -> list[str]:
        tokens = tuple(tokens)
        bs = self.pool.block_size
        labels = []
        for i in range(len(tokens) // bs):
            end = (i + 1) * bs
            name = next((n for n, t in self.prompts if len(t) >= end and t[:end] == tokens[:end]),
                        None)
            if name is None:
                test.unnamed += 1
                name = f"#{test.unnamed}"
                entry = (name, tokens)
                self.prompts.append(entry)
                self.unhashed.append(entry)
            labels.append(f"{name}[{i}]")
        if len(tokens) % bs:
            labels.append(f"+{len(tokens) % bs} tokens")
        return labels

    def label(self, h):
        if h is None:
            return None
        try:
            return self.hash_names.get(h, "?")
        except TypeError:  # an unhashable "hash"
            return "?"

    def _hash_new_prompts(self) -> None:
        while self.unhashed:
            name, tokens = self.unhashed.pop(0)
            try:
                hashes = _items(self.pool.block_hashes(list(tokens)))
            except Exception:
                continue
            for i, h in enumerate(hashes):
                try:
                    self.hash_names.setdefault(h, f"{name}[{i}]")
                except TypeError:
                    pass

    # -- steps ---------------------------------------------------------------------------------

    def args(self, op: str, args: tuple, kwargs: dict, test: _TestTrace) -> dict:
        out = dict(zip(PARAMS.get(op, ()), args))
        out.update(kwargs)
        for key, value in out.items():
            if key == "tokens":
                out[key] = _read(lambda: self.token_labels(value, test))
            else:
                out[key] = _read(lambda: plain(value))
        return out

    def state(self) -> dict:
        pool = self.pool
        if self.levels:
            state = {name: _read(lambda m=method: plain(_items(getattr(pool, m)())))
                     for name, method in self.levels.items()}
        else:
            self._hash_new_prompts()
            state = {"free_queue": _read(lambda: plain(_items(pool.free_queue))),
                     "ref_cnt": _read(lambda: plain(_items(pool.ref_cnt))),
                     "blocks": _read(self._blocks)}
            for tier in self.tiers:
                state[tier] = _read(lambda t=tier: [self.label(h)
                                                    for h in _items(getattr(pool, t))])
        state["counters"] = {c: _read(lambda c=c: plain(getattr(pool, c))) for c in self.counters}
        return state

    def _blocks(self) -> list:
        pool = self.pool
        try:
            hashes = _items(pool.block_hash)
        except Exception:  # no per-block list: the inverse of hash_to_block
            n = min(int(pool.num_blocks), MAX_ITEMS)
            held: dict[object, object] = {}  # block -> its first hash, both the pool's objects
            for h, b in itertools.islice(pool.hash_to_block.items(), MAX_ITEMS):
                held.setdefault(b, h)
            hashes = [held.get(b) for b in range(n)]
        return [self.label(h) for h in hashes]

    def call(self, op: str, method, *args, **kwargs):
        test = _running()
        if test is None or test.steps >= MAX_STEPS:
            return method(*args, **kwargs)
        shown_args = self.args(op, args, kwargs, test)
        try:
            result = method(*args, **kwargs)
        except Exception as exc:
            self._record(test, op, shown_args,
                         {"raised": _short(f"{type(exc).__name__}: {exc}")})
            raise
        self._record(test, op, shown_args, _read(lambda: plain(result)))
        return result

    def _record(self, test: _TestTrace, op: str, args: dict, result) -> None:
        try:
            step = {"pool": self.number, "op": op, "args": args, "result": result,
                    "state": self.state()}
            size = len(json.dumps(step, default=str))
            if size > MAX_STEP_BYTES:
                step["state"] = {"cut": f"{size} bytes"}
                if len(json.dumps(step, default=str)) > MAX_STEP_BYTES:
                    step["args"] = step["result"] = {"cut": "too long"}
            S.writer.emit("trace", test=test.name, i=test.steps, step=step)
            test.steps += 1
        except Exception:  # a timeline is an aid: it never changes how the test ends
            pass


class TracedPool:
    """Stands for a pool: attributes are the pool's; calls of the traced ops are recorded."""

    def __init__(self, pool, trace: _PoolTrace):
        object.__setattr__(self, "_traced_pool", pool)
        object.__setattr__(self, "_trace", trace)

    def __getattr__(self, name):
        value = getattr(self._traced_pool, name)
        if name in self._trace.ops and callable(value):
            trace = self._trace

            def traced_call(*args, **kwargs):
                return trace.call(name, value, *args, **kwargs)
            return traced_call
        return value

    def __setattr__(self, name, value):
        setattr(self._traced_pool, name, value)

    def __delattr__(self, name):
        delattr(self._traced_pool, name)

    def __repr__(self):
        return repr(self._traced_pool)


def traced(pool, *, ops=POOL_OPS, counters=(), tiers=(), levels=None):
    """`pool` wrapped so that calls of `ops` are recorded (see the module's docstring).
    counters: attribute names read after each call; tiers: attributes whose keys (block
    hashes) are shown as labels, in their order; levels: {name: method} of a pool without
    blocks (141's LRU levels), shown as the keys the method returns."""
    if isinstance(pool, TracedPool):
        return pool
    test = _running()
    number = 0
    if test is not None:
        test.pools += 1
        number = test.pools
    return TracedPool(pool, _PoolTrace(pool, number, ops, counters, tiers, levels))


def name_prompts(pool, prompts: dict, hash_names: dict | None = None) -> None:
    """Names the test's prompts ({"A": tokens}) for the labels of a traced pool; `hash_names`
    ({hash: "A[0]"}) when the test already computed them. Nothing for any other pool."""
    if isinstance(pool, TracedPool):
        pool._trace.name_prompts(prompts, hash_names)
