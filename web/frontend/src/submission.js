// The submission page: live progress until the server's verdict, then the report.
import { LiveProgress, renderReport } from "./render.js";
import { followSubmission } from "./follow.js";
import { setLabels, tr } from "./i18n.js";
import { EVENTS } from "./vocabulary.js";

const data = JSON.parse(document.getElementById("submission-data").textContent);
const container = document.getElementById("report");
const statusEl = document.getElementById("sub-status");
// A public failure links to its test's line, shown in the problem page's Tests tab.
const links = { files: null, open: (file, line) => (location.href = `/problems/${encodeURIComponent(data.problem)}#test-source:${file}:${line}`) };
// The student's file by name (no editor here: the line is named, the problem page marks it).
const code = { file: null, open: null };
const filesReady = fetch(`/api/problems/${encodeURIComponent(data.problem)}`)
  .then((r) => (r.ok ? r.json() : null)).then((p) => {
    links.files = (p && p.public_tests) || null;
    code.file = p && p.module ? `${p.module}.py` : null;
    setLabels(p && p.labels);
  }).catch(() => null);
// A hint's rule opens on the problem page, at that heading of the statement.
const hints = { problem: data.problem, ruleHref: (anchor) => `/problems/${encodeURIComponent(data.problem)}#${encodeURIComponent(anchor)}` };

function show(sub) {
  statusEl.textContent = tr(sub.status);
  statusEl.className = `status s-${sub.status}`;
  if (sub.report) {
    // the links need the test files: wait for them briefly, draw without them if they fail
    filesReady.finally(() => {
      renderReport(container, sub.report, { origin: "server", links, code: code.file ? code : null, hints });
      container.dataset.done = "1";
    });
  }
}

if (data.status === "done") {
  show(data);
} else {
  const live = document.createElement("div");
  container.replaceChildren(live);
  const progress = new LiveProgress(live);
  if (data.queue_position) progress.setStatus(`${tr("queued, position")} ${data.queue_position}`);
  followSubmission(data.id, progress, (type) => {
    if (type === EVENTS.RUNNING) {
      statusEl.textContent = tr("running");
      statusEl.className = "status s-running";
    }
  }).then(show);
}

// Back into the editor: the problem page opens its draft (localStorage, the key problem.js uses).
// The button comes disabled in the HTML: a click before this module has run would do nothing.
const loadBtn = document.getElementById("load-code");
if (loadBtn) {
  loadBtn.addEventListener("click", () => {
    const code = JSON.parse(document.getElementById("submission-code").textContent);
    const key = `kvp:draft:${loadBtn.dataset.problem}`;
    const draft = localStorage.getItem(key);
    if (draft !== null && draft !== code && !confirm(tr("Replace your current draft of this problem with this submission's code?"))) return;
    localStorage.setItem(key, code);
    location.href = `/problems/${encodeURIComponent(loadBtn.dataset.problem)}`;
  });
  loadBtn.disabled = false;
}
