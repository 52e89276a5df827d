// Renders a Report (the grading core's JSON, or the page runner's look-alike) and live progress.
// The same markup for Run (in the page) and Submit (from the server).
import { tr, trLabel } from "./i18n.js";
import { EVENTS, VERDICT_NAMES } from "./vocabulary.js";
import { secondsText, timeoutSeconds } from "./report_text.js";
import { hasValueDiff, isTimeout, outputBlock, sourceLink, timeoutLine, traceView } from "./report_parts.js";
import { hintBox } from "./hints.js";
import { failureMessage, headline } from "./report_text.js";

// What the page runner says of a test it could not run here (not verdicts: the server's count).
const BROWSER_STATES = {
  skipped: "Skipped in the browser",
  unsupported: "Cannot run in the browser",
};

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export function verdictName(v) {
  const name = VERDICT_NAMES[v] || BROWSER_STATES[v];
  return name ? capitalized(tr(name)) : v;
}

function capitalized(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

export function verdictBadge(v) {
  return el("span", { class: `verdict v-${v}`, title: verdictName(v) }, v || "…");
}

function pretty(value) {
  if (value === undefined) return "";
  try {
    const s = JSON.stringify(value, null, 1);
    return s.length > 160 ? JSON.stringify(value, null, 2) : JSON.stringify(value);
  } catch {
    return String(value);
  }
}

function fmtTime(s) {
  if (s === null || s === undefined) return "";
  return s < 1 ? `${Math.round(s * 1000)} ms` : `${s.toFixed(2)} s`;
}

/** "tiered.py, line 49": a link that puts the editor's cursor there (`code.open(line)`), or
 * plain text where there is no editor (the submission page links to the problem page). */
function lineLink(code, line) {
  if (!code || !Number.isInteger(line)) return null;
  const text = tr("{file}, line {n}", { file: code.file, n: line });
  if (!code.open) return el("span", { class: "your-line" }, text);
  return el("a", { href: `#line-${line}`, class: "your-line", "data-line": String(line), title: tr("show this line in the editor"),
    onclick: (ev) => (ev.preventDefault(), code.open(line)) }, text);
}

export function failureBox(f, { title, test = null, links = null, timeoutS = null, code = null } = {}) {
  if (!f) return null;
  const rows = [];
  if (f.test) rows.push(el("div", { class: "ff-test" }, el("code", {}, f.test), " ", f.verdict ? verdictBadge(f.verdict) : null, " ", sourceLink(links, f.test, f)));
  const head = headline({ ...f, message: failureMessage(f, tr, trLabel) });
  if (head && f.kind === "exception") rows.push(el("div", { class: "ff-headline" }, el("strong", {}, head), " ", lineLink(code, f.line)));
  if (isTimeout(f)) rows.push(timeoutLine(f, test, timeoutS));
  if (f.label !== undefined && f.label !== null) {
    rows.push(el("div", { class: "ff-label" }, tr("Observation: "), el("strong", {}, trLabel(f.label))));
  }
  if (hasValueDiff(f)) {
    rows.push(
      el("div", { class: "ff-diff" },
        el("div", {}, el("div", { class: "ff-h" }, tr("expected (reference)")), el("pre", { class: "exp" }, pretty(f.expected))),
        el("div", {}, el("div", { class: "ff-h" }, tr("got (your code)")), el("pre", { class: "got" }, pretty(f.got))),
      ),
    );
  }
  if (f.kind === "failed") rows.push(el("div", { class: "ff-msg" }, tr("failed (a hidden test: how it failed is not shown)")));
  if (f.message && !(head && f.kind === "exception")) rows.push(el("div", { class: "ff-msg" }, failureMessage(f, tr, trLabel)));
  if (f.traceback) rows.push(el("details", {}, el("summary", {}, tr("traceback")), el("pre", { class: "tb" }, f.traceback)));
  rows.push(traceView(f));
  return el("div", { class: "first-failure" }, el("div", { class: "ff-title" }, title || tr("First failure")), ...rows);
}

const ORIGINS = {
  browser: "in your browser (public tests)",
  practice: "practice run on the server (public tests, not stored)",
  server: "server verdict",
};

export function renderReport(container, report, { origin = "server", note = null, links = null, timeoutS = null, code = null, hints = null } = {}) {
  container.replaceChildren();
  if (!report) return;
  const head = el("div", { class: "report-head" },
    verdictBadge(report.verdict),
    el("span", { class: "verdict-name" }, verdictName(report.verdict)),
    report.score !== undefined && report.score !== null
      ? el("span", { class: "score" }, origin !== "server"
        ? tr("public tests passed (practice, not the score): {p}%", { p: Math.round(report.score * 100) })
        : `${tr("score")} ${Math.round(report.score * 100)}%`) : null,
    // only a submission's verdict is the server's verdict: a practice run there counts for nothing
    el("span", { class: "origin" }, ORIGINS[origin] ? tr(ORIGINS[origin]) : tr("server verdict")),
  );
  container.append(head);
  if (note) container.append(el("p", { class: "note" }, note));
  if (report.unsupported) container.append(el("p", { class: "banner info" }, report.unsupported));
  if (report.compile_error) {
    const ce = report.compile_error;
    container.append(el("div", { class: "first-failure" }, el("div", { class: "ff-title" }, tr("The file does not import")),
      el("div", { class: "ff-headline" }, el("strong", {}, headline({ ...ce, message: failureMessage(ce, tr, trLabel) }) || ""), " ", lineLink(code, ce.line)),
      ce.traceback ? el("pre", { class: "tb" }, ce.traceback) : null,
      ce.hint ? el("p", { class: "note ce-hint" }, ce.hint) : null));
  }
  if (report.first_failure && !report.compile_error) {
    const ff = report.first_failure;
    const row = (report.tests || []).find((t) => t.name === ff.test) || null;
    container.append(failureBox(ff, { test: row, links, timeoutS, code }));
  }
  const offered = hints && report.hints && report.hints.length ? hintBox(report.hints, hints) : null;
  if (offered) container.append(offered);
  const tests = report.tests || [];
  if (tests.length) {
    const body = el("tbody");
    for (const t of tests) {
      const f = t.failure;
      let text = "";
      if (f && f.kind === "failed") text = tr("failed (a hidden test: how it failed is not shown)");
      else if (f && isTimeout({ ...f, verdict: t.verdict })) text = tr("time limit exceeded after {s} s", { s: secondsText(timeoutSeconds(f, t, timeoutS)) });
      else if (f && f.message && f.label && !f.message.startsWith(f.label)) text = `${trLabel(f.label)} — ${failureMessage(f, tr, trLabel)}`;
      else if (f) text = (f.message && failureMessage(f, tr, trLabel)) || trLabel(f.label) || "";
      const detail = text ? el("div", { class: "row-detail" }, text) : null;
      body.append(el("tr", { class: `row-${t.verdict}`, "data-test": t.name },
        el("td", {}, verdictBadge(t.verdict)),
        el("td", { class: "tname" }, el("code", {}, t.name), " ", t.verdict !== "AC" && t.suite !== "hidden" ? sourceLink(links, t.name, f) : null, detail),
        el("td", { class: "num" }, fmtTime(t.time_s)),
      ));
    }
    container.append(el("table", { class: "tests" }, el("thead", {}, el("tr", {}, el("th", {}, tr("verdict")), el("th", {}, tr("test")), el("th", { class: "num" }, tr("time")))), body));
  }
  const tm = report.timings || {};
  const prov = report.provenance || {};
  const facts = [];
  if (tm.total_s !== undefined) facts.push(tr("total {t}", { t: fmtTime(tm.total_s) }));
  if (tm.public_s !== undefined) facts.push(tr("public {t}", { t: fmtTime(tm.public_s) }));
  if (tm.hidden_s !== undefined) facts.push(tr("hidden {t}", { t: fmtTime(tm.hidden_s) }));
  if (tm.browser_ms !== undefined) facts.push(tr("in page {t}", { t: fmtTime(tm.browser_ms / 1000) }));
  if (prov.device) facts.push(tr("device {d}", { d: `${tr(prov.device)}${prov.gpu_name ? ` (${prov.gpu_name})` : ""}` }));
  if (prov.python) facts.push(`Python ${prov.python}`);
  if (prov.torch) facts.push(`torch ${prov.torch}`);
  if (prov.judge_version) facts.push(tr("judge {v}", { v: prov.judge_version }));
  if (report.problem && report.problem.version) facts.push(tr("problem version {v}", { v: String(report.problem.version).slice(0, 12) }));
  if (prov.missing_layers && prov.missing_layers.length) facts.push(tr("sandbox without {layers}", { layers: prov.missing_layers.join(", ") }));
  if (facts.length) container.append(el("p", { class: "facts" }, facts.join(" · ")));
  container.append(outputBlock(report) || "");
}

// Live progress of a server grading, fed with the SSE events.
export class LiveProgress {
  constructor(container) {
    this.container = container;
    this.rows = new Map();
    this.status = el("div", { class: "live-status" }, tr("queued"));
    this.table = el("tbody");
    container.replaceChildren(this.status, el("table", { class: "tests live" }, this.table));
  }
  setStatus(text) {
    this.status.textContent = text;
  }
  row(name) {
    let r = this.rows.get(name);
    if (!r) {
      const badge = el("span", { class: "verdict v-pending" }, "·");
      const time = el("td", { class: "num" });
      r = { tr: el("tr", { "data-test": name }, el("td", {}, badge), el("td", { class: "tname" }, el("code", {}, name)), time), badge, time };
      this.rows.set(name, r);
      this.table.append(r.tr);
    }
    return r;
  }
  event(type, data) {
    switch (type) {
      case EVENTS.QUEUED:
      case EVENTS.POSITION:
        if (data.queue_position) this.setStatus(`${tr("queued, position")} ${data.queue_position}`);
        break;
      case EVENTS.RUNNING:
        this.rows.clear();
        this.table.replaceChildren();
        this.setStatus(data.attempt > 1 ? `${tr("grading…")} (#${data.attempt})` : tr("grading…"));
        break;
      case EVENTS.REQUEUED:
        this.setStatus(tr("the worker stopped; queued again"));
        break;
      case EVENTS.SUITE_STARTED:
        this.setStatus(tr("running the {suite} tests…", { suite: tr(data.suite) }));
        for (const t of data.tests || []) this.row(t);
        break;
      case EVENTS.TEST_STARTED: {
        const r = this.row(data.test);
        r.badge.className = "verdict v-running";
        r.badge.textContent = "…";
        break;
      }
      case EVENTS.TEST_FINISHED: {
        const r = this.row(data.test);
        r.badge.className = `verdict v-${data.verdict}`;
        r.badge.textContent = data.verdict;
        r.time.textContent = fmtTime(data.time_s);
        break;
      }
      case EVENTS.DONE:
        this.setStatus(`${tr("done:")} ${data.verdict || ""}`);
        break;
      default:
        break;
    }
  }
}
