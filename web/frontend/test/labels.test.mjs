// node --experimental-detect-module --test web/frontend/test/ (tests/browser/test_frontend_units.py runs it)
import { test } from "node:test";
import assert from "node:assert/strict";
import { compileLabels, labelText } from "../src/labels.js";
import { translateMessage } from "../src/report_text.js";

const T = compileLabels({ "counters": "计数器", "step {i}: counters": "第 {i} 步：计数器", "{label}: counters": "{label}：计数器",
  "seed {n} ({p})": "种子 {n}（{p}）", "lookup(X) returns": "lookup(X) 的返回值", "blocks of X[0]": "X[0] 的块" });

test("exact keys, then the most specific pattern; a placeholder's part is looked up too", () => {
  assert.equal(labelText(T, "counters"), "计数器");
  assert.equal(labelText(T, "step 3: counters"), "第 3 步：计数器");
  assert.equal(labelText(T, "seed 4 (write_back): counters"), "种子 4（write_back）：计数器");
  assert.equal(labelText(T, "nothing like it"), null);
});

test("a message's label is worded, its path inside the value kept", () => {
  const label = (x) => labelText(T, x) ?? x;
  const tr = (t, vars = {}) => Object.entries(vars).reduce((s, [k, v]) => s.replaceAll(`{${k}}`, v), t);
  assert.equal(translateMessage("lookup(X) returns[1]: expected 3, got 1", tr, label), "lookup(X) 的返回值[1]: expected 3, got 1");
  assert.equal(translateMessage("blocks of X[0][2]: expected 3, got 1", tr, label), "X[0] 的块[2]: expected 3, got 1");
  assert.equal(translateMessage("observation 2 ('counters') was never recorded", tr, label), "observation 2 ('计数器') was never recorded");
});
