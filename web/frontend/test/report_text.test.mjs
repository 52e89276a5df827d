// node --experimental-detect-module --test web/frontend/test/ (tests/browser/test_frontend_units.py runs it)
import { test } from "node:test";
import assert from "node:assert/strict";
import { secondsText, sourceLocation, timeoutSeconds, usefulOutput } from "../src/report_text.js";

test("pytest's counts never reach the page: '6 passed' under a WA is dropped", () => {
  assert.equal(usefulOutput("......                                                     [100%]\n6 passed in 0.41s\n"), null);
  assert.equal(usefulOutput("public/test_basic.py ....\n========== 6 passed in 0.12s ==========\n"), null);
  assert.equal(usefulOutput("=== short test summary info ===\n1 failed, 5 passed in 2.0s"), null);
  assert.equal(usefulOutput(""), null);
  assert.equal(usefulOutput(null), null);
});

test("what the code printed stays, without the counts around it", () => {
  const out = usefulOutput("debug: hits 3\n..F...  [100%]\n1 failed, 5 passed in 0.3s\n");
  assert.equal(out, "debug: hits 3");
  assert.match(usefulOutput("Traceback (most recent call last):\n  KeyError: 7\n"), /KeyError: 7/);
});

test("a timed-out test says how long it ran", () => {
  assert.equal(timeoutSeconds({ message: "x" }, { time_s: 5.04 }), 5.04);
  assert.equal(timeoutSeconds({ message: "the test used more CPU time than its limit (12.0s)" }, { time_s: null }), 12);
  assert.equal(timeoutSeconds({ message: "no number" }, null, 8), 8);
  assert.equal(secondsText(5.04), "5");
  assert.equal(secondsText(12.4), "12");
  assert.equal(secondsText(null), "?");
});

const FILES = {
  "public/test_x.py": [
    "from fake import F",            // 1
    "",                              // 2
    "def test_one(observe):",        // 3
    "    p = F()",                   // 4
    '    observe("step 1: blocks", p.a)', // 5
    '    observe("step 2: free_queue", p.q)', // 6
    "",                              // 7
    "def test_two(observe):",        // 8
    '    observe("step 2: free_queue", 1)', // 9
  ].join("\n"),
};

test("a public failure links to its observation's line, its file:line, or its def", () => {
  assert.deepEqual(sourceLocation(FILES, "public/test_x.py::test_one", { label: "step 2: free_queue" }), { file: "public/test_x.py", line: 6 });
  assert.deepEqual(sourceLocation(FILES, "public/test_x.py::test_two", { label: "step 2: free_queue" }), { file: "public/test_x.py", line: 9 });
  assert.deepEqual(sourceLocation(FILES, "public/test_x.py::test_one", { where: "test_x.py:4" }), { file: "public/test_x.py", line: 4 });
  assert.deepEqual(sourceLocation(FILES, "public/test_x.py::test_two", null), { file: "public/test_x.py", line: 8 });
  assert.equal(sourceLocation(FILES, "hidden/test_y.py::test_z", null), null);
});
