// The pool's timeline: the reference's trace and the student's side by side, one step at a time,
// opened on the first step where they differ. The same picture for Run (in the page) and Submit.
import { el } from "./render.js";
import { tr } from "./i18n.js";
import { callText, divergesAt, resultText, stateView, stepDifferences } from "./timeline_model.js";

const STATE_NAMES = { "in-use": "in use", "free-cached": "free, cached", "free-empty": "free, empty" };

function legend() {
  return el("div", { class: "tl-legend", "aria-hidden": "true" },
    ...Object.entries(STATE_NAMES).map(([k, name]) => el("span", { class: "tl-key" }, el("span", { class: `tl-swatch tl-${k}` }), tr(name))));
}

function blockCell(b, diff) {
  const what = `${tr("block")} ${b.id}: ${tr(STATE_NAMES[b.state])}${b.label ? ` ${b.label}` : ""}` +
    (b.refCnt > 0 ? `, ref_cnt ${b.refCnt}` : "") + (b.queuePos !== null ? `, free_queue #${b.queuePos}` : "");
  return el("div", { class: `tl-cell tl-${b.state}${diff ? " tl-diff" : ""}`, role: "listitem", title: what, "aria-label": what, "data-block": b.id, "data-state": b.state },
    el("span", { class: "tl-bid" }, String(b.id)),
    el("span", { class: "tl-label" }, b.label ?? "·"),
    el("span", { class: "tl-rc" }, b.refCnt > 0 ? `×${b.refCnt}` : ""));
}

function chips(items, cls, diff) {
  const list = el("div", { class: `tl-chips${diff ? " tl-diff" : ""}`, role: "list" });
  if (!items.length) list.append(el("span", { class: "tl-empty" }, tr("(empty)")));
  for (const x of items) list.append(el("span", { class: `tl-chip ${cls}`, role: "listitem" }, String(x)));
  return list;
}

function row(name, content, note = null) {
  return el("div", { class: "tl-row" }, el("div", { class: "tl-rname" }, name, note ? el("small", {}, note) : null), content);
}

function sideView(side, step, diffs) {
  const title = side === "expected" ? tr("expected (reference)") : tr("got (your code)");
  const box = el("div", { class: `tl-side tl-${side}`, "data-side": side }, el("div", { class: "ff-h" }, title));
  if (!step) {
    box.append(el("p", { class: "tl-none" }, side === "got" ? tr("your code made no such call") : tr("the reference made no such call")));
    return box;
  }
  const call = el("div", { class: `tl-call${diffs.has("op") || diffs.has("args") ? " tl-diff" : ""}` }, el("code", {}, callText(step)));
  const res = resultText(step);
  if (res) call.append(" → ", el("code", { class: diffs.has("result") ? "tl-diff" : null }, res));
  box.append(call);
  const v = stateView(step.state);
  const gpu = el("div", { class: "tl-cells", role: "list" }, ...v.blocks.map((b) => blockCell(b, diffs.has(`block:${b.id}`))));
  box.append(row("GPU", gpu));
  box.append(row("free_queue", chips(v.freeQueue.map(String), "tl-q", diffs.has("free_queue")), tr("front first")));
  for (const t of v.tiers) {
    box.append(row(t.name === "host" ? tr("host") : tr("disk"), chips(t.keys, `tl-${t.name}`, diffs.has(`tier:${t.name}`)), tr("least recent first")));
  }
  const counters = Object.entries(v.counters);
  if (counters.length) {
    box.append(el("div", { class: "tl-counters" }, ...counters.map(([k, x]) =>
      el("span", { class: diffs.has(`counter:${k}`) ? "tl-diff" : null }, `${k} ${JSON.stringify(x)}`))));
  }
  return box;
}

/** A <section class="timeline"> for one trace; opens on the first differing step. `where`
 * names the test (shown in the heading). */
export function renderTimeline(trace, { where = null } = {}) {
  const expected = trace.expected || [];
  const got = trace.got || [];
  const count = Math.max(expected.length, got.length);
  const diverge = divergesAt(trace);
  const root = el("section", { class: "timeline", "data-diverges-at": diverge, "aria-label": tr("The block pool, step by step") });
  if (!count) return root;
  const slider = el("input", { type: "range", class: "tl-slider", min: 0, max: count - 1, step: 1, value: diverge, "aria-label": tr("step") });
  const pos = el("span", { class: "tl-pos", "aria-live": "polite" });
  const steps = el("ol", { class: "tl-steps" });
  const sides = el("div", { class: "tl-sides" });
  const banner = el("div", { class: "tl-banner" });
  const stepButtons = [];
  for (let i = 0; i < count; i++) {
    const s = expected[i] || got[i];
    const b = el("button", { type: "button", class: `tl-step${i === diverge ? " diverges" : ""}`, "data-step": i, onclick: () => show(i) }, `${i + 1}. ${s.op}`);
    stepButtons.push(b);
    steps.append(el("li", {}, b));
  }
  function show(i) {
    i = Math.max(0, Math.min(count - 1, i));
    slider.value = String(i);
    root.dataset.step = String(i);
    const diffs = stepDifferences(expected[i], got[i]);
    pos.textContent = tr("step {i} of {n}", { i: i + 1, n: count });
    stepButtons.forEach((b, k) => b.classList.toggle("current", k === i));
    stepButtons.forEach((b, k) => b.setAttribute("aria-current", k === i ? "step" : "false"));
    sides.classList.toggle("tl-diverging", i === diverge);
    banner.textContent = i === diverge ? tr("Step {i}: the first step where your pool differs from the reference's", { i: i + 1 })
      : i < diverge ? tr("Step {i}: both pools agree so far", { i: i + 1 }) : tr("Step {i}: after the first difference", { i: i + 1 });
    banner.className = `tl-banner${i === diverge ? " diverges" : ""}`;
    sides.replaceChildren(sideView("expected", expected[i], diffs), sideView("got", got[i], diffs));
  }
  slider.addEventListener("input", () => show(Number(slider.value)));
  const prev = el("button", { type: "button", class: "btn tl-prev", "aria-label": tr("previous step"), onclick: () => show(Number(slider.value) - 1) }, "◀");
  const next = el("button", { type: "button", class: "btn tl-next", "aria-label": tr("next step"), onclick: () => show(Number(slider.value) + 1) }, "▶");
  const jump = el("button", { type: "button", class: "btn ghost tl-jump", onclick: () => show(diverge) }, tr("first difference"));
  root.append(
    el("div", { class: "tl-head" }, el("strong", {}, tr("Where the pools parted")), where ? el("code", {}, where) : null, legend()),
    el("div", { class: "tl-controls" }, prev, slider, next, pos, jump),
    steps, banner, sides);
  show(diverge);
  return root;
}
