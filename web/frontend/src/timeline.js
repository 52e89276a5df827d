// The pool's timeline: the reference's trace and the student's side by side, one step at a time,
// opened on the first step where they differ. The same picture for Run (in the page) and Submit.
import { el } from "./render.js";
import { tr } from "./i18n.js";
import { alignSteps, callText, chipText, divergingRow, resultText, stateDifferences, stateView, stepDifferences } from "./timeline_model.js";

const TIER_NAMES = { host: "host memory", disk: "disk", gpu: "GPU", cpu: "CPU" };
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
  // a list only when there is something in it: role=list must hold listitems
  const list = el("div", { class: `tl-chips${diff ? " tl-diff" : ""}`, role: items.length ? "list" : null });
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
  if (step.state && step.state.cut) box.append(el("p", { class: "note" }, tr("(the pool's state is too big to show)")));
  if (v.blocks.length) {
    const gpu = el("div", { class: "tl-cells", role: "list" }, ...v.blocks.map((b) => blockCell(b, diffs.has(`block:${b.id}`))));
    box.append(row(tr("GPU blocks"), gpu));
    box.append(row("free_queue", chips(v.freeQueue.map(String), "tl-q", diffs.has("free_queue")), tr("front first")));
  }
  for (const t of v.tiers) {
    box.append(row(tr(TIER_NAMES[t.name] || t.name), chips(t.keys, `tl-${t.name}`, diffs.has(`tier:${t.name}`)), tr("least recent first")));
  }
  const counters = Object.entries(v.counters);
  if (counters.length) {
    box.append(el("div", { class: "tl-counters" }, ...counters.map(([k, x]) =>
      el("span", { class: diffs.has(`counter:${k}`) ? "tl-diff" : null }, `${k} ${JSON.stringify(x)}`))));
  }
  return box;
}

/** One difference of stateDifferences in the reader's words. */
function differenceText(d) {
  switch (d.what) {
    case "free_queue": return tr("the free queue (which blocks are free, in which order)");
    case "ref_cnt": return tr("block {b}'s reference count", { b: d.block });
    case "contents": return tr("what block {b} holds", { b: d.block });
    case "tier": return tr("the entries of {tier}", { tier: tr(TIER_NAMES[d.tier] || d.tier) });
    case "counter": return tr("the counter {name}", { name: d.name });
    case "result": return tr("what the call returned");
    default: return tr("the call itself");
  }
}

/** A <section class="timeline"> for one trace (see timeline_model.js), opened on the first step
 * where the two pools differ, marked; without one (the traces agree) on the last step. */
export function renderTimeline(trace, { where = null } = {}) {
  const rows = alignSteps(trace);
  const count = rows.length;
  const diverge = divergingRow(trace, rows);
  const start = diverge === null ? Math.max(0, count - 1) : diverge;
  const root = el("section", { class: "timeline", "data-diverges-at": diverge === null ? "none" : rows[diverge].i, "aria-label": tr("The block pool, step by step") });
  if (!count) return root;
  const slider = el("input", { type: "range", class: "tl-slider", min: 0, max: count - 1, step: 1, value: start, "aria-label": tr("step") });
  const pos = el("span", { class: "tl-pos", "aria-live": "polite" });
  const steps = el("ol", { class: "tl-steps" });
  const sides = el("div", { class: "tl-sides" });
  const banner = el("div", { class: "tl-banner" });
  const multiPool = new Set(rows.map((r) => (r.expected || r.got).pool).filter((x) => x !== undefined)).size > 1;
  const stepButtons = rows.map((r, k) => {
    const s = r.expected || r.got;
    const b = el("button", { type: "button", class: `tl-step${k === diverge ? " diverges" : ""}`, "data-step": r.i, tabindex: "-1", onclick: () => show(k) },
      `${r.i + 1}. ${multiPool && s.pool ? `#${s.pool} ` : ""}${chipText(s)}`);
    steps.append(el("li", {}, b));
    return b;
  });
  function show(k) {
    k = Math.max(0, Math.min(count - 1, k));
    const r = rows[k];
    slider.value = String(k);
    root.dataset.step = String(r.i);
    pos.textContent = tr("step {i} of {n}", { i: r.i + 1, n: rows[count - 1].i + 1 });
    slider.setAttribute("aria-valuetext", `${pos.textContent}: ${callText(r.expected || r.got)}${k === diverge ? ` (${tr("first difference")})` : ""}`);
    stepButtons.forEach((b, j) => {
      b.classList.toggle("current", j === k);
      b.setAttribute("aria-current", j === k ? "step" : "false");
    });
    sides.classList.toggle("tl-diverging", k === diverge);
    const n = r.i + 1;
    banner.textContent = diverge === null ? tr("Step {i}: the two pools agree at every step shown; the failure is in what the test observed", { i: n })
      : k === diverge ? tr("Step {i}: the first step where your pool differs from the reference's", { i: n })
        : k < diverge ? tr("Step {i}: both pools agree so far", { i: n }) : tr("Step {i}: after the first difference", { i: n });
    if (k === diverge) {
      const words = stateDifferences(r.expected, r.got).map(differenceText);
      if (words.length) banner.append(el("span", { class: "tl-what" }, ` ${tr("What differs:")} ${words.join(tr("; "))}.`));
    }
    banner.className = `tl-banner${k === diverge ? " diverges" : ""}`;
    const diffs = stepDifferences(r.expected, r.got);
    sides.replaceChildren(sideView("expected", r.expected, diffs), sideView("got", r.got, diffs));
  }
  slider.addEventListener("input", () => show(Number(slider.value)));
  const prev = el("button", { type: "button", class: "btn tl-prev", "aria-label": tr("previous step"), onclick: () => show(Number(slider.value) - 1) }, "◀");
  const next = el("button", { type: "button", class: "btn tl-next", "aria-label": tr("next step"), onclick: () => show(Number(slider.value) + 1) }, "▶");
  const jump = diverge === null ? null : el("button", { type: "button", class: "btn ghost tl-jump", onclick: () => show(diverge) }, tr("first difference"));
  const total = trace.total && (trace.total.expected > count || trace.total.got > count)
    ? el("span", { class: "note" }, tr("(earlier steps are not shown)")) : null;
  root.append(
    el("div", { class: "tl-head" }, el("strong", {}, tr("Where the pools parted")), where ? el("code", {}, where) : null, legend()),
    el("div", { class: "tl-controls" }, prev, slider, next, pos, jump, total),
    steps, banner, sides);
  show(start);
  return root;
}
