// The problem page's assembly: the editor, the page's Python, the problem's data and the buttons;
// Run (public tests in the page's Python) and Submit (the server) are run_submit.js.
import { EditorView, basicSetup } from "codemirror";
import { python, localCompletionSource, globalCompletion } from "@codemirror/lang-python";
import { cpp } from "@codemirror/lang-cpp";
import { keymap } from "@codemirror/view";
import { Prec } from "@codemirror/state";
import { indentUnit } from "@codemirror/language";
import { indentWithTab } from "@codemirror/commands";
import { linter, lintGutter, setDiagnostics } from "@codemirror/lint";
import { PyWorker } from "./pyworker.js";
import { signatureHelp } from "./signature.js";
import { el } from "./render.js";
import { runAndSubmit } from "./run_submit.js";
import { autocompletion } from "@codemirror/autocomplete";
import { tr, setLabels } from "./i18n.js";
import { translateMessage } from "./report_text.js";
import { mobileTabs } from "./layout.js";
import { TestsTab, showExperiment, translateStatic } from "./panels.js";
import { renderMathLater } from "./math_loader.js";

const config = JSON.parse(document.getElementById("config").textContent);
const starter = JSON.parse(document.getElementById("starter").textContent);
const draftKey = `kvp:draft:${config.problem}`;
const $ = (id) => document.getElementById(id);
const results = $("results");
const statusLine = $("py-status");
const runBtn = $("run");
const submitBtn = $("submit");
// Run and Submit answer in panels of their own, so a Run never hides a verdict still coming.
const submitPanel = $("submit-results");
const stopBtn = $("stop");
// The problem's language (the editor's data-language: python, cpp, cuda). A C++ or CUDA C++
// problem is compiled on the server: its editor has the C++ mode and Run is a practice run there.
const language = $("editor").dataset.language || "python";
const native = language !== "python";
const SUFFIX = { python: ".py", cpp: ".cpp", cuda: ".cu" };
translateStatic();
const testsTab = new TestsTab({ pane: document.querySelector(".statement-pane"), tabStatement: $("tab-statement"), tabTests: $("tab-tests"), panel: $("tests-pane") });
// Failures link to the public test's line in the Tests tab.
const links = { files: null, open: (file, line) => (panes.show("statement"), testsTab.open(file, line)) };
// Below ~900 px the page shows one of Statement / Code / Result at a time (layout.js).
const panes = mobileTabs(document.querySelector(".problem-layout"));

// Timings the end-to-end test reads (and a curious student can too).
const timings = (window.kvpTimings = { pageStartMs: performance.timeOrigin });

let problem = null; // GET /api/problems/{id}
let restarted = false; // after Stop or a timed-out Run: the status says so, not the page's age
const py = (window.kvpPy = new PyWorker(config, {
  onStatus: (text) => {
    if (text === "Restarting Python…") restarted = true;
    statusLine.textContent = translateMessage(text, tr);
  },
  onReady: (ms, split) => {
    timings.pythonReadyMs = performance.now();
    timings.workerInitMs = ms;
    timings.pythonSplit = split || null;
    statusLine.textContent = restarted
      ? tr("Python restarted: ready for the next Run")
      : tr("Python ready ({s} s after the page opened)", { s: (performance.now() / 1000).toFixed(1) }) + splitText(split);
    statusLine.classList.add("ready");
    if (problem) py.setFiles(problem.module, problem.handbook, problem.grading_python);
    updateRunButton();
  },
  onSnapshotSaved: (msg) => {
    timings.snapshotSavedMs = msg.ms;
    timings.snapshotBytes = msg.bytes;
  },
  onEditorReady: (ms) => {
    timings.editorReadyMs = performance.now();
    statusLine.textContent += tr(" · completion ready");
  },
  onFatal: (message) => {
    statusLine.textContent = tr("Python could not start in this browser: {message}. Submit still works.", { message });
    statusLine.classList.add("error");
  },
}));
// Python first, before the editor is built and the problem fetched: its downloads and the wasm's
// compile then go on while the rest of the page sets itself up.
if (config.browser) {
  timings.workerStartMs = performance.now();
  py.start();
}

// Where the start went, in the timing line: a reload's restore of the saved snapshot, a first
// visit's restore of the build's, or (no snapshot built) a cold start's Pyodide, wheels and imports.
function splitText(split) {
  if (!split) return "";
  const s = (k) => ((split[k] || 0) / 1000).toFixed(1);
  if (split.source === "snapshot") {
    return tr(" · restored from the saved snapshot: read {read} s, Pyodide {pyodide} s, files {files} s", { read: s("read_ms"), pyodide: s("pyodide_ms"), files: s("files_ms") });
  }
  // A first visit: the snapshot the build made downloads while Pyodide compiles its wasm.
  if (split.source === "build") {
    return tr(" · restored from the build's snapshot: download {fetch} s, Pyodide {pyodide} s, files {files} s", { fetch: s("fetch_ms"), pyodide: s("pyodide_ms"), files: s("files_ms") });
  }
  return tr(" · Pyodide {pyodide} s, pytest wheels {wheels} s, imports {imports} s", { pyodide: s("pyodide_ms"), wheels: s("wheels_ms"), imports: s("imports_ms") });
}

// ------------------------------------------------------------------ the editor

// Python: its mode, the page's Python for completion (jedi's answer alone when it has one: the
// language's own sources would add builtins and repeat the names jedi gives, issue 12), syntax
// errors and signatures. C++: its mode (no page compiler: the server's report marks the lines).
function languageSupport() {
  if (native) return [cpp(), indentUnit.of("  ")];
  return [python(), indentUnit.of("    "), autocompletion({ override: [pageCompletions] }),
    linter(syntaxErrors, { delay: 400 }), signatureHelp(py)];
}

let saveTimer = null;
const view = new EditorView({
  doc: localStorage.getItem(draftKey) ?? starter,
  parent: $("editor"),
  extensions: [
    basicSetup,
    ...languageSupport(),
    EditorView.lineWrapping,
    keymap.of([indentWithTab]),
    Prec.highest(keymap.of([{ key: "Mod-Enter", run: () => (runTests(), true) }, { key: "Mod-s", run: () => (saveDraft(), true) }])),
    // the textbox's accessible name (the wrapper's label does not reach the contenteditable)
    // tabindex: the editor's scroller is a keyboard-reachable region by its content (axe's
    // scrollable-region-focusable does not count contenteditable alone)
    EditorView.contentAttributes.of({ "aria-label": $("editor").getAttribute("aria-label") || tr("Code editor"), tabindex: "0" }),
    lintGutter(),
    EditorView.updateListener.of((u) => {
      if (u.focusChanged && u.view.hasFocus) py.wantEditor();
      if (u.docChanged) {
        clearTimeout(saveTimer);
        saveTimer = setTimeout(saveDraft, 400);
      }
    }),
  ],
});
window.kvpEditor = view;

function code() {
  return view.state.doc.toString();
}

// A failure's line in the student's file: marked in the editor (a lint diagnostic, cleared by
// the next edit's lint) and, when asked, scrolled to with the cursor on it.
const studentCode = {
  file: null,
  open: (n) => {
    panes.show("code");
    const line = view.state.doc.line(Math.min(Math.max(1, n), view.state.doc.lines));
    view.dispatch({ selection: { anchor: line.from }, effects: EditorView.scrollIntoView(line.from, { y: "center" }) });
    view.focus();
  },
};
function markLine(n, message) {
  if (!Number.isInteger(n) || n < 1) return;
  const line = view.state.doc.line(Math.min(n, view.state.doc.lines));
  view.dispatch(setDiagnostics(view.state, [{ from: line.from, to: Math.max(line.to, line.from), severity: "error", message }]));
}
function markFailure(report) {
  if (!report) return;
  const f = report.compile_error || report.first_failure;
  if (f && Number.isInteger(f.line) && (report.compile_error || f.kind === "exception")) {
    markLine(f.line, [f.exc_type, translateMessage(f.message, tr)].filter(Boolean).join(": "));
  }
}
// Hints: the rule's link opens the statement at that heading.
const hintOptions = {
  problem: config.problem,
  ruleHref: (anchor) => `#${anchor}`,
  onRule: (ev, anchor) => {
    ev.preventDefault();
    panes.show("statement");
    testsTab.select(false);
    const target = document.getElementById(anchor);
    if (target) target.scrollIntoView({ block: "start" });
    history.replaceState(null, "", `#${anchor}`);
  },
};
function setCode(text) {
  view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
}
function saveDraft() {
  clearTimeout(saveTimer);
  const text = code();
  if (text === starter) localStorage.removeItem(draftKey);
  else localStorage.setItem(draftKey, text);
}
// The 400 ms pause before saving must not lose an edit to a reload or a closed tab.
addEventListener("pagehide", saveDraft);
addEventListener("beforeunload", saveDraft);
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "hidden") saveDraft();
});

// Private names after public ones, dunders last, whatever CodeMirror's match score says.
function nameBoost(label) {
  if (label.startsWith("__")) return -99;
  return label.startsWith("_") ? -50 : 0;
}

async function pageCompletions(ctx) {
  const word = ctx.matchBefore(/[\w.]*/);
  if (!ctx.explicit && (!word || word.from === word.to)) return null;
  if (!py.editorReady) return fallbackCompletions(ctx); // until jedi has loaded
  const pos = ctx.pos;
  const line = ctx.state.doc.lineAt(pos);
  const items = await py.ask("complete", { code: ctx.state.doc.toString(), line: line.number, col: pos - line.from }, 5000);
  if (items === null) return fallbackCompletions(ctx); // jedi did not answer in time
  if (!items.length) return null;
  const seen = new Set();
  const options = [];
  for (const c of items) {
    if (seen.has(c.label)) continue;
    seen.add(c.label);
    options.push({ label: c.label, boost: nameBoost(c.label), type: { statement: "keyword", param: "variable", instance: "variable", path: "text" }[c.type] || c.type });
  }
  const dot = word.text.lastIndexOf(".");
  return { from: dot >= 0 ? word.from + dot + 1 : word.from, options, validFor: /^\w*$/ };
}

// Without jedi: the names in this file, then the builtins, each once.
async function fallbackCompletions(ctx) {
  const parts = [await localCompletionSource(ctx), await globalCompletion(ctx)].filter(Boolean);
  if (!parts.length) return null;
  const seen = new Set();
  const options = parts.flatMap((p) => p.options).filter((o) => !seen.has(o.label) && seen.add(o.label));
  return { from: parts[0].from, options: options.map((o) => ({ ...o, boost: nameBoost(o.label) })), validFor: /^\w*$/ };
}

async function syntaxErrors(v) {
  if (!py.ready) return [];
  const doc = v.state.doc;
  const found = await py.ask("lint", { code: doc.toString() }, 1500);
  return (found || []).map((e) => {
    const line = doc.line(Math.min(Math.max(1, e.line), doc.lines));
    const from = Math.min(line.from + Math.max(0, e.col - 1), line.to);
    let to = e.end_line === e.line ? Math.min(line.from + Math.max(0, e.end_col - 1), line.to) : line.to;
    if (to <= from) to = Math.min(from + 1, doc.length);
    return { from, to: Math.max(to, from), severity: "error", message: `SyntaxError: ${e.message}` };
  });
}

// ------------------------------------------------------------------ problem data

async function loadProblem() {
  const r = await fetch(config.api);
  problem = await r.json();
  setLabels(problem.labels); // its observation labels in the reader's language
  timings.problemLoadedMs = performance.now();
  links.files = problem.public_tests || {};
  studentCode.file = `${problem.module}${SUFFIX[language] || ".py"}`;
  testsTab.setFiles(links.files);
  showExperiment($("experiment"), problem.experiment);
  // /problems/143#test-source:public/test_x.py:12 (the submission page's links) opens that line
  const at = decodeURIComponent(location.hash).match(/^#test-source:(.+):(\d+)$/);
  if (at) testsTab.open(at[1], Number(at[2]));
  if (py.ready) py.setFiles(problem.module, problem.handbook, problem.grading_python);
  updateRunButton();
}

// ------------------------------------------------------------------ Run and Submit (run_submit.js)

const { runTests, submit, updateRunButton } = runAndSubmit({
  config,
  py,
  timings,
  results,
  submitPanel,
  runBtn,
  stopBtn,
  submitBtn,
  statusLine,
  experiment: $("experiment"),
  code,
  problem: () => problem,
  showResult: () => panes.show("result"),
  report: { links, code: studentCode, hints: hintOptions },
  markFailure,
  saveDraft,
});

// ------------------------------------------------------------------ buttons

runBtn.addEventListener("click", runTests);
stopBtn.addEventListener("click", () => {
  stopBtn.disabled = true;
  py.stop();
});
submitBtn.addEventListener("click", submit);
$("download").addEventListener("click", () => {
  const blob = new Blob([code()], { type: native ? "text/x-c++src" : "text/x-python" });
  const name = native ? config.download_name.replace(/\.py$/, SUFFIX[language]) : config.download_name;
  const a = el("a", { href: URL.createObjectURL(blob), download: name });
  document.body.append(a);
  a.click();
  setTimeout(() => (URL.revokeObjectURL(a.href), a.remove()), 1000);
});
$("reset").addEventListener("click", () => {
  if (code() === starter || confirm(tr("Replace your code with the starter? Your draft is lost."))) {
    setCode(starter);
    localStorage.removeItem(draftKey);
  }
});
for (const a of document.querySelectorAll("[data-stmt-lang]")) {
  a.addEventListener("click", (ev) => {
    ev.preventDefault();
    const lang = a.dataset.stmtLang;
    for (const s of document.querySelectorAll(".statement")) s.hidden = s.dataset.lang !== lang;
    for (const b of document.querySelectorAll("[data-stmt-lang]")) b.classList.toggle("active", b === a);
    document.cookie = `kvp_lang=${lang}; path=/; max-age=31536000; samesite=lax`;
  });
}
// Ctrl/Cmd+Enter runs from anywhere on the page (the editor handles it itself when focused).
document.addEventListener("keydown", (ev) => {
  if ((ev.ctrlKey || ev.metaKey) && ev.key === "Enter" && !ev.defaultPrevented) {
    ev.preventDefault();
    runTests();
  }
});
py.onBusy = updateRunButton;
if (native) {
  statusLine.textContent = tr("C++: Run compiles your file with the tests on the server and runs the example cases (a practice run: not stored, no score).");
} else if (!config.browser) {
  statusLine.textContent = config.server_run_why === "event loop"
    ? tr("This problem's tests wait on an event loop (asyncio), which the page's Python cannot do: Run sends the public tests to the server (a practice run: not stored, no score).")
    : tr("This problem's tests need numpy or torch, which the page does not have: Run sends the public tests to the server (a practice run: not stored, no score).");
}
renderMathLater(config.math_js);
loadProblem();
