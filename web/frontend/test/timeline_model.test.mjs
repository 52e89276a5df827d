// node --experimental-detect-module --test web/frontend/test/ (tests/browser/test_frontend_units.py runs it)
import { test } from "node:test";
import assert from "node:assert/strict";
import { alignSteps, blockState, callText, divergingRow, stateView, stepDifferences } from "../src/timeline_model.js";

const step = (op, args, result, state) => ({ op, args, result, state });
const pool = (free_queue, ref_cnt, labels, host = []) => ({ free_queue, ref_cnt, blocks: labels, host, counters: { num_hits: 0 } });

test("a block's colour: in use beats cached; free with a prefix is cached; else empty", () => {
  assert.equal(blockState(2, "A[0]"), "in-use");
  assert.equal(blockState(0, "A[0]"), "free-cached");
  assert.equal(blockState(0, null), "free-empty");
});

test("stateView reads labels as a list or a {block: label} map and places blocks in the queue", () => {
  const v = stateView({ free_queue: [3, 1], ref_cnt: [1, 0, 0, 0], blocks: { 1: "A[1]" }, host: ["C[0]"] });
  assert.deepEqual(v.blocks.map((b) => b.state), ["in-use", "free-cached", "free-empty", "free-empty"]);
  assert.deepEqual(v.blocks.map((b) => b.queuePos), [null, 1, null, 0]);
  assert.deepEqual(v.tiers, [{ name: "host", keys: ["C[0]"] }]);
  const w = stateView({ free_queue: [], ref_cnt: [0, 0], blocks: ["B[0]", null], disk: ["X"] });
  assert.deepEqual(w.blocks.map((b) => b.label), ["B[0]", null]);
  assert.deepEqual(w.tiers.map((t) => t.name), ["disk"]);
});

test("the first differing step, and what differs in it", () => {
  const a = [step("free", [[0]], null, pool([0], [0], ["A[0]"])), step("lookup", ["A"], [3, 1], pool([2, 0], [0, 0, 0, 0], [null, "A[1]", null, "A[0]"], ["C[0]"]))];
  const b = [a[0], step("lookup", ["A"], [3, 3], pool([1, 2], [0, 0, 0, 0], [null, "C[1]", null, "A[0]"], ["C[0]"]))];
  assert.equal(divergingRow({ expected: a, got: b }), 1);
  assert.equal(divergingRow({ expected: a, got: a }), null);
  assert.equal(divergingRow({ expected: a, got: b, diverges_at: null }), null, "null: the traces agree");
  assert.equal(divergingRow({ expected: a, got: b, diverges_at: 0 }), 0, "the trace's own index wins");
  const d = stepDifferences(a[1], b[1]);
  assert.ok(d.has("result") && d.has("free_queue") && d.has("block:1"));
  assert.ok(!d.has("op") && !d.has("block:3") && !d.has("tier:host") && !d.has("block:0"));
  assert.ok(stepDifferences(a[1], undefined).has("missing"));
});

test("callText names the call as the student wrote it", () => {
  assert.equal(callText(step("lookup", ["A[0..1] + new"], null, {})), "lookup(A[0..1] + new)");
  assert.equal(callText(step("allocate", { n: 2 }, [0, 1], {})), "allocate(2)");
  assert.equal(callText(step("cache_blocks", { tokens: ["A[0]"], blocks: [3], num_computed: 0 }, null, {})), "cache_blocks(tokens=[A[0]], blocks=[3], num_computed=0)");
  assert.equal(callText(step("free", { blocks: [1, 0] }, null, {})), "free([1, 0])");
});

test("steps pair by their absolute number, so cut lists and a missing step line up", () => {
  const e = [{ i: 5, op: "free" }, { i: 6, op: "lookup" }, { i: 7, op: "allocate" }];
  const g = [{ i: 6, op: "lookup" }, { i: 7, op: "lookup" }];
  const rows = alignSteps({ expected: e, got: g });
  assert.deepEqual(rows.map((r) => [r.i, r.expected && r.expected.op, r.got && r.got.op]),
    [[5, "free", null], [6, "lookup", "lookup"], [7, "allocate", "lookup"]]);
  assert.equal(divergingRow({ expected: e, got: g, diverges_at: 7 }, rows), 2, "diverges_at is a step number, not a list position");
});

test("141's LRU state (no blocks) shows its gpu and cpu key lists as tiers", () => {
  const v = stateView({ gpu: ["A", 42], cpu: ["B"], counters: { num_misses: 1 } });
  assert.equal(v.blocks.length, 0);
  assert.deepEqual(v.tiers, [{ name: "gpu", keys: ["A", 42] }, { name: "cpu", keys: ["B"] }]);
  assert.equal(callText({ op: "lookup", args: { tokens: ["Y[0]", "#1[2]", "+3 tokens"] } }), "lookup([Y[0], #1[2], +3 tokens])");
});
