// Run (the public tests, in the page's Python; or, for a problem whose tests need numpy or torch,
// on the server as a practice run) and Submit (to the server's queue). problem.js builds the page
// and hands over what these answer in.
import { LiveProgress, renderReport, el, verdictName } from "./render.js";
import { followSubmission } from "./follow.js";
import { tr } from "./i18n.js";
import { translateMessage } from "./report_text.js";
import { announce } from "./layout.js";
import { showExperiment } from "./panels.js";
import { standingNote } from "./deadlines.js";
import { renderMathLater } from "./math_loader.js";

// page: config, py (the PyWorker), timings, the elements (results, submitPanel, runBtn, stopBtn,
// submitBtn, statusLine, experiment), code() (the editor's text), problem() (GET /api/problems/{id},
// null until loaded), showResult() (the Result pane, on a narrow screen), report (renderReport's
// links, code and hints), markFailure(report) (the editor's mark) and saveDraft().
export function runAndSubmit(page) {
  const { config, py, timings, results, submitPanel, runBtn, stopBtn, submitBtn, statusLine } = page;
  let serverRunBusy = false;
  let runCount = 0;

  // ---------------------------------------------------------------- Run

  function updateRunButton() {
    if (!config.browser) {
      // numpy or torch: the page's Python cannot run the tests, the server runs them (not stored)
      runBtn.disabled = !(page.problem() && config.server_run && !serverRunBusy);
      runBtn.title = tr("Run sends the public tests to the server: a practice run, not stored, no score");
      return;
    }
    runBtn.disabled = !(py.ready && page.problem() && config.browser && !py.busy);
  }

  // Run for a problem whose tests need numpy or torch: the server grades the public tests in its
  // sandbox and answers their report; no submission is stored, no score is given.
  async function runOnServer() {
    if (runBtn.disabled) return;
    if (tooBig(page.code(), results)) return;
    serverRunBusy = true;
    updateRunButton();
    page.showResult();
    const started = performance.now();
    results.replaceChildren(el("div", { class: "live-status" }, tr("Running the public tests on the server (a practice run: not stored, no score)…")));
    const box = el("div", { class: "run-result", "data-run": String(++runCount), "data-origin": "server" });
    try {
      const r = await fetch("/api/practice-runs", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ problem: config.problem, code: page.code() }),
      });
      const body = await r.json();
      timings.lastRunMs = performance.now() - started;
      results.replaceChildren(box);
      if (r.status !== 200) {
        box.append(el("p", { class: "banner warn" }, translateMessage((body.error && body.error.message) || `HTTP ${r.status}`, tr)));
      } else {
        // after the report: renderReport empties the box it draws in
        renderReport(box, body.report, { origin: "practice", ...page.report });
        box.prepend(el("p", { class: "banner info practice-run" }, tr("Practice run on the server: the public tests only, not stored, no score.")));
        page.markFailure(body.report);
        announce(verdictAnnouncement(tr("Run"), body.report && body.report.verdict));
      }
    } catch (e) {
      results.replaceChildren(box);
      box.append(el("p", { class: "banner warn" }, tr("Run failed: {error}", { error: String(e) })));
    } finally {
      box.dataset.done = "1";
      serverRunBusy = false;
      updateRunButton();
    }
  }

  // Run refuses what Submit would refuse, with the same words.
  function tooBig(text, panel) {
    const size = new TextEncoder().encode(text).length;
    if (size <= config.max_code_bytes) return false;
    panel.replaceChildren(el("p", { class: "banner warn too-big" }, tr("The code is {size} bytes; the limit is {limit}.", { size, limit: config.max_code_bytes })));
    announce(tr("The code is {size} bytes; the limit is {limit}.", { size, limit: config.max_code_bytes }));
    return true;
  }

  // A button disabled while it works drops the keyboard's focus to the page's body (16 Tabs back
  // to Run): give it back once the button works again, unless the reader went elsewhere.
  function keepFocus(button) {
    const had = document.activeElement === button;
    return () => {
      const lost = !document.activeElement || document.activeElement === document.body;
      if (had && lost && !button.disabled) button.focus();
    };
  }

  async function runTests() {
    if (!config.browser) return runOnServerKeepingFocus();
    if (runBtn.disabled) return;
    const refocus = keepFocus(runBtn);
    try {
      await runInPage();
    } finally {
      refocus();
    }
  }

  async function runOnServerKeepingFocus() {
    const refocus = keepFocus(runBtn);
    try {
      await runOnServer();
    } finally {
      refocus();
    }
  }

  async function runInPage() {
    if (tooBig(page.code(), results)) return;
    const problem = page.problem(); // not null: Run is disabled until it is loaded
    runBtn.disabled = true;
    page.showResult();
    const started = performance.now();
    results.replaceChildren(el("div", { class: "live-status" }, tr("Running the public tests in your browser…")));
    stopBtn.hidden = false;
    stopBtn.disabled = false;
    const spec = {
      module: problem.module,
      source: page.code(),
      tests: problem.public_tests,
      handbook: problem.handbook,
      install: problem.handbook_install || [],
      expected: problem.public_expectations,
      // Submit's Python: its grammar decides CE, whatever the page's newer Python accepts.
      python: problem.grading_python,
      hints: problem.hints || [],
    };
    const out = await py.run(spec, config.timeout_s);
    stopBtn.hidden = true;
    timings.lastRunMs = performance.now() - started;
    // Which Run this answer belongs to: a wait for "the Run I started" must not read an older one.
    const box = el("div", { class: "run-result", "data-run": String(++runCount) });
    results.replaceChildren(box);
    if (out.stopped) {
      box.append(el("p", { class: "banner info run-stopped" }, tr("Stopped after {s} s: you pressed Stop. Python was restarted.", { s: (timings.lastRunMs / 1000).toFixed(1) })));
      statusLine.textContent = tr("Stopped: restarting Python…");
    } else if (out.timedOut) {
      renderReport(box, {
        verdict: "TLE",
        tests: [],
        first_failure: { kind: "timeout", limit_s: config.timeout_s, message: tr("Stopped after {s} s: the code did not finish (an endless loop?). Python was restarted.", { s: config.timeout_s }) },
      }, { origin: "browser" });
    } else if (out.error) {
      renderReport(box, { verdict: "IE", tests: [], first_failure: { message: tr("The page's Python failed: {error}", { error: out.error }) } }, { origin: "browser" });
    } else {
      const note = problem.public_expectations
        ? null
        : tr("The reference's observations are not available, so only the tests' own assertions were checked.");
      renderReport(box, out.result, { origin: "browser", note, ...page.report, timeoutS: config.timeout_s });
      page.markFailure(out.result);
    }
    announce(verdictAnnouncement(tr("Run"), out.stopped ? null : out.timedOut ? "TLE" : out.error ? "IE" : out.result && out.result.verdict));
    box.dataset.done = "1";
    updateRunButton();
    py.wantEditor();
  }

  // One short sentence per verdict for a screen reader (the panels themselves are not live).
  function verdictAnnouncement(what, verdict) {
    if (!verdict) return tr("{what}: stopped", { what });
    return tr("{what}: {verdict}", { what, verdict: verdictName(verdict) });
  }

  // ---------------------------------------------------------------- Submit

  async function submit() {
    const refocus = keepFocus(submitBtn);
    try {
      await submitCode();
    } finally {
      refocus();
    }
  }

  async function submitCode() {
    const text = page.code();
    if (tooBig(text, submitPanel)) return;
    submitBtn.disabled = true;
    page.showResult();
    page.saveDraft();
    const started = performance.now();
    try {
      const r = await fetch("/api/submissions", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ problem: config.problem, code: text }),
      });
      const body = await r.json();
      if (r.status !== 202) {
        submitPanel.replaceChildren(el("p", { class: "banner warn" }, translateMessage((body.error && body.error.message) || `HTTP ${r.status}`, tr)));
        return;
      }
      // Which submission this panel shows, so nothing reads the previous one's verdict as this one's.
      const box = el("div", { class: "submit-result", "data-submission": String(body.id) });
      const link = el("p", { class: "sub-link" }, `${tr("Submission")} `, el("a", { href: body.url }, `#${body.id}`), tr(" · the server's verdict counts"));
      const live = el("div");
      submitPanel.replaceChildren(link, live, box);
      const progress = new LiveProgress(live);
      progress.setStatus(`${tr("queued, position")} ${body.queue_position ?? "?"}`);
      // What it counts for (on time, late at 80 %...) is settled when it is stored: asked now,
      // shown with the verdict; a failure only leaves the note out.
      const standing = fetch(`/api/submissions/${body.id}`, { cache: "no-store" })
        .then((resp) => (resp.ok ? resp.json() : {}))
        .then((sub) => sub.assignments || [], () => []);
      // The server gone mid-grading: Submit works again at once, the verdict comes when it is back.
      const data = await followSubmission(body.id, progress, () => {}, { onLost: () => (submitBtn.disabled = false) });
      timings.lastSubmitMs = performance.now() - started;
      live.remove();
      renderReport(box, data.report, { origin: "server", ...page.report });
      const note = standingNote(await standing, el);
      const head = box.querySelector(".report-head");
      if (note && head) head.after(note);
      else if (note) box.prepend(note);
      page.markFailure(data.report);
      announce(verdictAnnouncement(tr("Submit"), data.report && data.report.verdict));
      if (data.report && data.report.verdict === "AC") openExplanation();
      const exp = data.report && data.report.experiment;
      const problem = page.problem();
      if (exp && exp.yours) showExperiment(page.experiment, problem && problem.experiment ? problem.experiment : exp, exp.yours);
      box.dataset.done = "1";
    } catch (e) {
      submitPanel.replaceChildren(el("p", { class: "banner warn" }, tr("Submit failed: {error}", { error: String(e) })));
    } finally {
      submitBtn.disabled = false;
    }
  }

  // An accepted submission opens the worked explanation where the locked note stood (it came
  // only with a reload): the server sends it once the visitor has the AC.
  async function openExplanation() {
    const locked = document.querySelector(".explanation-locked");
    if (!locked) return;
    let body = null;
    try {
      const r = await fetch(`/problems/${encodeURIComponent(config.problem)}/explanation`, { cache: "no-store" });
      body = r.ok ? await r.json() : null;
    } catch {}
    if (!body || !body.explanations) return;
    const shown = document.querySelector("article.statement:not([hidden]):not(.explanation)");
    const langs = Object.keys(body.explanations);
    const want = shown ? shown.dataset.lang : config.lang;
    const lang = langs.includes(want) ? want : langs[0];
    for (const l of langs) {
      const article = el("article", { class: "statement explanation", "data-lang": l, lang: l === "zh" ? "zh" : "en", hidden: langs.length > 1 && l !== lang });
      const heading = el("h2", {}, tr("Explanation"));
      article.innerHTML = body.explanations[l]; // the problem's own text, rendered by the server
      article.prepend(heading);
      locked.before(article);
    }
    locked.remove();
    renderMathLater(config.math_js);
    announce(tr("The worked explanation is open under the statement."));
  }

  return { runTests, submit, updateRunButton };
}
