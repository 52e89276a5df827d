// node --experimental-detect-module --test web/frontend/test/ (tests/test_frontend_units.py runs it)
import { test } from "node:test";
import assert from "node:assert/strict";
import { blockState, callText, divergesAt, firstDifference, stateView, stepDifferences } from "../src/timeline_model.js";

const step = (op, args, result, state) => ({ op, args, result, state });
const pool = (free_queue, ref_cnt, labels, host = []) => ({ free_queue, ref_cnt, block_labels: labels, host, counters: { num_hits: 0 } });

test("a block's colour: in use beats cached; free with a prefix is cached; else empty", () => {
  assert.equal(blockState(2, "A[0]"), "in-use");
  assert.equal(blockState(0, "A[0]"), "free-cached");
  assert.equal(blockState(0, null), "free-empty");
});

test("stateView reads labels as a list or a {block: label} map and places blocks in the queue", () => {
  const v = stateView({ free_queue: [3, 1], ref_cnt: [1, 0, 0, 0], block_labels: { 1: "A[1]" }, host: ["C[0]"] });
  assert.deepEqual(v.blocks.map((b) => b.state), ["in-use", "free-cached", "free-empty", "free-empty"]);
  assert.deepEqual(v.blocks.map((b) => b.queuePos), [null, 1, null, 0]);
  assert.deepEqual(v.tiers, [{ name: "host", keys: ["C[0]"] }]);
  const w = stateView({ free_queue: [], ref_cnt: [0, 0], labels: ["B[0]", null], disk: ["X"] });
  assert.deepEqual(w.blocks.map((b) => b.label), ["B[0]", null]);
  assert.deepEqual(w.tiers.map((t) => t.name), ["disk"]);
});

test("the first differing step, and what differs in it", () => {
  const a = [step("free", [[0]], null, pool([0], [0], ["A[0]"])), step("lookup", ["A"], [3, 1], pool([2, 0], [0, 0, 0, 0], [null, "A[1]", null, "A[0]"], ["C[0]"]))];
  const b = [a[0], step("lookup", ["A"], [3, 3], pool([1, 2], [0, 0, 0, 0], [null, "C[1]", null, "A[0]"], ["C[0]"]))];
  assert.equal(firstDifference(a, b), 1);
  assert.equal(firstDifference(a, a), null);
  assert.equal(divergesAt({ expected: a, got: b }), 1);
  assert.equal(divergesAt({ expected: a, got: b, diverges_at: 0 }), 0, "the trace's own index wins");
  const d = stepDifferences(a[1], b[1]);
  assert.ok(d.has("result") && d.has("free_queue") && d.has("block:1"));
  assert.ok(!d.has("op") && !d.has("block:3") && !d.has("tier:host") && !d.has("block:0"));
  assert.ok(stepDifferences(a[1], undefined).has("missing"));
});

test("callText names the call as the student wrote it", () => {
  assert.equal(callText(step("lookup", ["A[0..1] + new"], null, {})), "lookup(A[0..1] + new)");
  assert.equal(callText(step("allocate", { n: 2 }, [0, 1], {})), "allocate(n=2)");
  assert.equal(callText(step("free", [[1, 0]], null, {})), "free([1,0])");
});
