// The problem page's side panels: the public tests' code in a tab beside the statement (failures
// link to a line of it) and the chapter's experiment chart.
import { el } from "./render.js";
import { tr } from "./i18n.js";
import { renderExperimentChart } from "./chart.js";

/** Static labels the template marks with data-i18n (the server renders them in English). */
export function translateStatic(root = document) {
  for (const node of root.querySelectorAll("[data-i18n]")) node.textContent = tr(node.dataset.i18n);
}

function lineId(file, n) {
  return `src-${file.replace(/[^\w-]/g, "_")}-L${n}`;
}

// Test files first (what a failure names), helpers after.
function fileOrder(a, b) {
  const ta = a.split("/").pop().startsWith("test_") ? 0 : 1;
  const tb = b.split("/").pop().startsWith("test_") ? 0 : 1;
  return ta - tb || a.localeCompare(b);
}

/** The Statement / Tests tabs of the statement pane. */
export class TestsTab {
  constructor({ pane, tabStatement, tabTests, panel }) {
    Object.assign(this, { pane, tabStatement, tabTests, panel });
    this.files = null;
    tabStatement.addEventListener("click", () => this.select(false));
    tabTests.addEventListener("click", () => this.select(true));
    for (const t of [tabStatement, tabTests]) {
      t.addEventListener("keydown", (ev) => {
        if (ev.key !== "ArrowLeft" && ev.key !== "ArrowRight") return;
        ev.preventDefault();
        const other = t === tabStatement ? tabTests : tabStatement;
        if (other.disabled) return;
        this.select(other === tabTests);
        other.focus();
      });
    }
  }

  /** files: {"public/test_x.py": text}; nothing to show turns the tab off. */
  setFiles(files) {
    this.files = files || {};
    const names = Object.keys(this.files).filter((f) => f.endsWith(".py")).sort(fileOrder);
    this.tabTests.disabled = !names.length;
    this.panel.replaceChildren(el("p", { class: "note" }, tr("The public tests Run executes in your browser (the hidden tests are not shown).")));
    for (const name of names) {
      const code = el("code");
      this.files[name].replace(/\n$/, "").split("\n").forEach((text, i) => {
        // each line is a block of its own: a "\n" after it as well would double the spacing
        code.append(el("span", { class: "src-line", id: lineId(name, i + 1), "data-line": i + 1, tabindex: "-1" }, text || " "));
      });
      this.panel.append(el("section", { class: "src-file", "data-file": name },
        el("h3", {}, el("code", {}, name.replace(/^public\//, ""))), el("pre", { class: "src" }, code)));
    }
  }

  select(tests) {
    this.pane.classList.toggle("show-tests", tests);
    this.panel.hidden = !tests;
    this.tabTests.classList.toggle("active", tests);
    this.tabStatement.classList.toggle("active", !tests);
    this.tabTests.setAttribute("aria-selected", String(tests));
    this.tabStatement.setAttribute("aria-selected", String(!tests));
    this.tabTests.tabIndex = tests ? 0 : -1;
    this.tabStatement.tabIndex = tests ? -1 : 0;
  }

  /** Show `file` at `line`, marked, and move the focus there. */
  open(file, line) {
    this.select(true);
    for (const old of this.panel.querySelectorAll(".src-line.hl")) old.classList.remove("hl");
    const target = document.getElementById(lineId(file, line));
    if (!target) return;
    target.classList.add("hl");
    target.scrollIntoView({ block: "center" });
    target.focus({ preventScroll: true });
  }
}

// The experiments' run names (problems/*/experiment.json), which the table of words translates.
export const RUN_NAMES = ["no cache", "GPU only", "tiered", "write-back", "write-through"];

/** Chart series from the experiment data ({reference: [{run, per_turn}], yours: same | null}):
 * the reference's runs, then the student's own (dashed) when a Submit brought them. */
export function experimentSeries(experiment, yours = null) {
  const out = [];
  for (const r of (experiment && experiment.reference) || []) {
    if (Array.isArray(r.per_turn) && r.per_turn.length) out.push({ name: `${tr(r.run)} (${tr("reference")})`, key: r.run, values: r.per_turn });
  }
  for (const r of yours || []) {
    if (Array.isArray(r.per_turn) && r.per_turn.length) out.push({ name: `${tr(r.run)} (${tr("your pool")})`, key: r.run, values: r.per_turn, dashed: true });
  }
  return out;
}

/** Fill the experiment section (hidden when there are no numbers); `yours` from a report. */
export function showExperiment(section, experiment, yours = null) {
  const series = experimentSeries(experiment, yours);
  section.hidden = !series.length;
  if (!series.length) return;
  section.replaceChildren(el("h2", {}, tr("The chapter's experiment")), renderExperimentChart(series));
}
