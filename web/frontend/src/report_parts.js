// Parts of a report beyond the verdict table: a timeout in words, the pool's timeline, a link to
// the public test's source line, and the printed output once pytest's own counts are gone.
import { el } from "./render.js";
import { tr } from "./i18n.js";
import { renderTimeline } from "./timeline.js";
import { secondsText, sourceLocation, timeoutSeconds, usefulOutput } from "./report_text.js";

export function isTimeout(f) {
  return !!f && (f.kind === "timeout" || f.verdict === "TLE");
}

/** Expected/got are worth a diff only for an observation that differs (never a timeout's nulls). */
export function hasValueDiff(f) {
  if (!f || isTimeout(f)) return false;
  if (f.kind && f.kind !== "observation") return false;
  return (f.expected !== undefined && f.expected !== null) || (f.got !== undefined && f.got !== null);
}

/** "time limit exceeded after N s" for a timed-out test (`test` is its row, for the time). */
export function timeoutLine(f, test = null, fallbackS = null) {
  const s = timeoutSeconds(f, test, fallbackS);
  return el("div", { class: "ff-timeout" }, tr("time limit exceeded after {s} s", { s: secondsText(s) }));
}

/** A link that opens the test's source at the failing line (the page's Tests tab), or null.
 * `links.files`: {"public/test_x.py": text}; `links.open(file, line)`: shows it. */
export function sourceLink(links, testName, failure) {
  if (!links || !links.files || !links.open) return null;
  const at = sourceLocation(links.files, testName, failure);
  if (!at) return null;
  const text = `${at.file.replace(/^public\//, "")}:${at.line}`;
  return el("a", { href: `#test-source:${at.file}:${at.line}`, class: "src-link", "data-file": at.file, "data-line": at.line,
    title: tr("show the test's code"), onclick: (ev) => (ev.preventDefault(), links.open(at.file, at.line)) }, text);
}

/** The pool's timeline for a failure that carries a trace (public tests of pool problems). */
export function traceView(f) {
  if (!f || !f.trace || !(f.trace.expected || f.trace.got)) return null;
  return renderTimeline(f.trace, { where: f.test || null });
}

/** What the code printed, without pytest's counts; null when that leaves nothing. */
export function outputBlock(report) {
  const text = usefulOutput(report && report.output);
  if (!text) return null;
  return el("details", { class: "output" }, el("summary", {}, tr("printed output")), el("pre", {}, text));
}
