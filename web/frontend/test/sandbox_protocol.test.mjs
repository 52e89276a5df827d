// node --experimental-detect-module --test web/frontend/test/ (tests/browser/test_frontend_units.py runs it)
import { test } from "node:test";
import assert from "node:assert/strict";
import { FROM_PYTHON, TO_FRAME, TO_PYTHON, checked, transfers } from "../src/sandbox_protocol.js";

test("a declared message passes as a fresh object of its declared fields only", () => {
  const sent = { type: "run", id: 3, spec: { module: "lru" }, extra: "dropped" };
  const got = checked(TO_PYTHON, sent);
  assert.deepEqual(got, { type: "run", id: 3, spec: { module: "lru" } });
  assert.notEqual(got, sent);
  assert.deepEqual(checked(FROM_PYTHON, { type: "result", id: 1, error: "boom" }), { type: "result", id: 1, error: "boom" });
});

test("unknown types, missing or mistyped fields and non-objects are dropped", () => {
  assert.equal(checked(TO_PYTHON, { type: "eval", code: "x" }), null);
  assert.equal(checked(TO_PYTHON, { type: "toString" }), null); // not an own key of the table
  assert.equal(checked(TO_PYTHON, { type: "lint", id: 1 }), null);
  assert.equal(checked(TO_PYTHON, { type: "lint", id: "1", code: "x" }), null);
  assert.equal(checked(TO_PYTHON, { type: "complete", id: 1, code: "x", line: NaN, col: 0 }), null);
  assert.equal(checked(FROM_PYTHON, { type: "fetch", id: 1, url: { href: "x" } }), null);
  assert.equal(checked(TO_FRAME, { type: "boot", script: 1 }), null);
  for (const v of [null, "status", 7, [], new ArrayBuffer(1)]) assert.equal(checked(FROM_PYTHON, v), null);
  // a page message is not a worker message, nor the other way round
  assert.equal(checked(FROM_PYTHON, { type: "run", id: 1, spec: {} }), null);
  assert.equal(checked(TO_PYTHON, { type: "fetch", id: 1, url: "http://x/" }), null);
});

test("optional fields may be missing or null; bytes are ArrayBuffers, transferred", () => {
  const body = new ArrayBuffer(8);
  const got = checked(TO_PYTHON, { type: "fetched", id: 2, status: 200, body, mime: null });
  assert.deepEqual(Object.keys(got), ["type", "id", "status", "body"]);
  assert.deepEqual(transfers(got), [body]);
  assert.equal(checked(TO_PYTHON, { type: "fetched", id: 2, status: 200, body: new Uint8Array(8) }), null);
  assert.deepEqual(transfers(checked(TO_PYTHON, { type: "fetched", id: 2, status: 403 })), []);
});
