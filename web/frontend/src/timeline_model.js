// What the timeline picture shows, computed from a trace without the DOM (node unit tests run
// this file). A trace is {expected: [step], got: [step], diverges_at}; a step is
// {op, args, result, state}; state holds free_queue (front first), ref_cnt (per block), which
// prefix each block holds, the host (and disk) tier's keys in LRU order, and counters.

// Names the tracer may use for "which prefix each block holds": a list per block or {block: label}.
// (the tracer writes `blocks`: per block the prefix label, null without a hash, "?" unknown)
const LABEL_KEYS = ["blocks", "block_labels", "labels"];
// 143/144: host and disk tiers; 141 (an LRU without blocks): gpu and cpu key lists.
const TIER_KEYS = [["gpu", ["gpu"]], ["cpu", ["cpu"]], ["host", ["host"]], ["disk", ["disk"]]];

function pick(state, keys) {
  for (const k of keys) if (state && state[k] !== undefined && state[k] !== null) return state[k];
  return undefined;
}

/** Per block: its prefix label or null. Accepts a list (index = block) or a {block: label} map. */
export function blockLabels(state, numBlocks) {
  const raw = pick(state, LABEL_KEYS);
  const out = new Array(numBlocks).fill(null);
  if (Array.isArray(raw)) raw.forEach((v, i) => (out[i] = v ?? null));
  else if (raw && typeof raw === "object") {
    for (const [k, v] of Object.entries(raw)) if (Number(k) < numBlocks) out[Number(k)] = v ?? null;
  }
  return out;
}

/** "in-use" (ref_cnt > 0), "free-cached" (free, holds a prefix) or "free-empty". */
export function blockState(refCnt, label) {
  if (refCnt > 0) return "in-use";
  return label !== null && label !== undefined && label !== "" ? "free-cached" : "free-empty";
}

/** The picture of one step's state: blocks, free queue, tiers and counters. */
export function stateView(state) {
  const s = state || {};
  const refCnt = Array.isArray(s.ref_cnt) ? s.ref_cnt : [];
  const freeQueue = Array.isArray(s.free_queue) ? s.free_queue : [];
  const n = Math.max(refCnt.length, s.num_blocks || 0, ...freeQueue.map((b) => Number(b) + 1));
  const labels = blockLabels(s, n);
  const queuePos = new Map(freeQueue.map((b, i) => [Number(b), i]));
  const blocks = [];
  for (let i = 0; i < n; i++) {
    const rc = refCnt[i] ?? 0;
    blocks.push({ id: i, refCnt: rc, label: labels[i], state: blockState(rc, labels[i]), queuePos: queuePos.get(i) ?? null });
  }
  const tiers = [];
  for (const [name, keys] of TIER_KEYS) {
    const v = pick(s, keys);
    if (v !== undefined) tiers.push({ name, keys: Array.isArray(v) ? v : Object.keys(v) });
  }
  const counters = s.counters && typeof s.counters === "object" ? s.counters : {};
  return { blocks, freeQueue, tiers, counters };
}

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The two traces side by side by step number: [{i, expected, got}], in order. Steps carry their
 * absolute number `i` (older steps may have been cut); without it the list position stands in. */
export function alignSteps(trace) {
  const byI = new Map();
  const put = (steps, side) => (steps || []).forEach((s, k) => {
    const i = Number.isInteger(s && s.i) ? s.i : k;
    if (!byI.has(i)) byI.set(i, { i, expected: null, got: null });
    byI.get(i)[side] = s;
  });
  put(trace.expected, "expected");
  put(trace.got, "got");
  return [...byI.values()].sort((a, b) => a.i - b.i);
}

/** Position (in alignSteps) of the first differing step, or null when the traces agree. */
export function divergingRow(trace, rows = alignSteps(trace)) {
  if (Number.isInteger(trace.diverges_at)) {
    const k = rows.findIndex((r) => r.i === trace.diverges_at);
    if (k >= 0) return k;
  }
  if (trace.diverges_at === null) return null;
  const k = rows.findIndex((r) => !same(strip(r.expected), strip(r.got)));
  return k >= 0 ? k : null;
}

function strip(step) {
  if (!step) return step;
  const { i, ...rest } = step;
  return rest;
}

/** What differs at step i, so the picture can mark it: a set of part names
 * ("op", "args", "result", "free_queue", "block:3", "tier:host", "counter:num_hits", "missing"). */
export function stepDifferences(expStep, gotStep) {
  const out = new Set();
  if (!expStep || !gotStep) {
    if (expStep || gotStep) out.add("missing");
    return out;
  }
  for (const k of ["op", "args", "result", "pool"]) if (!same(expStep[k], gotStep[k])) out.add(k);
  const a = stateView(expStep.state);
  const b = stateView(gotStep.state);
  if (!same(a.freeQueue, b.freeQueue)) out.add("free_queue");
  for (let i = 0; i < Math.max(a.blocks.length, b.blocks.length); i++) {
    const x = a.blocks[i];
    const y = b.blocks[i];
    if (!x || !y || x.refCnt !== y.refCnt || x.label !== y.label) out.add(`block:${i}`);
  }
  const tiers = new Set([...a.tiers.map((t) => t.name), ...b.tiers.map((t) => t.name)]);
  for (const t of tiers) {
    const x = a.tiers.find((q) => q.name === t);
    const y = b.tiers.find((q) => q.name === t);
    if (!same(x && x.keys, y && y.keys)) out.add(`tier:${t}`);
  }
  for (const k of new Set([...Object.keys(a.counters), ...Object.keys(b.counters)])) {
    if (!same(a.counters[k], b.counters[k])) out.add(`counter:${k}`);
  }
  return out;
}

function short(v) {
  if (typeof v === "string") return v;
  // token labels read best bare: [A[0], A[1], +3 tokens]
  if (Array.isArray(v) && v.every((x) => typeof x === "string" || typeof x === "number")) return `[${v.join(", ")}]`;
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

/** "lookup(A[0..1] + new)" from op and args (a list, a {name: value} map or one value). */
export function callText(step) {
  if (!step) return "";
  const a = step.args;
  let inner = "";
  if (Array.isArray(a)) inner = a.map(short).join(", ");
  else if (a && typeof a === "object") {
    const e = Object.entries(a);
    inner = e.length === 1 ? short(e[0][1]) : e.map(([k, v]) => `${k}=${short(v)}`).join(", ");
  }
  else if (a !== undefined && a !== null) inner = short(a);
  return `${step.op}(${inner})`;
}

export function resultText(step) {
  if (!step || step.result === undefined || step.result === null) return "";
  return short(step.result);
}

/** A step as its chip names it: `lookup(Y[0] Y[1] #2[2])` (a list's items joined by spaces,
 * several arguments as name=value), cut to about `limit` characters. */
export function chipText(step, limit = 48) {
  if (!step) return "";
  const part = (v) => (Array.isArray(v) ? v.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join(" ") : typeof v === "string" ? v : JSON.stringify(v));
  const a = step.args;
  let inner = "";
  if (Array.isArray(a)) inner = part(a);
  else if (a && typeof a === "object") {
    const e = Object.entries(a);
    inner = e.length === 1 ? part(e[0][1]) : e.map(([k, v]) => `${k}=${part(v)}`).join(", ");
  } else if (a !== undefined && a !== null) inner = part(a);
  const text = `${step.op}(${inner})`;
  return text.length > limit ? `${text.slice(0, limit - 2)}…)` : text;
}

/** Which parts of the pool's state differ at a step, as facts the page words:
 * [{what: "free_queue"} | {what: "ref_cnt", block} | {what: "contents", block} |
 *  {what: "tier", tier} | {what: "counter", name} | {what: "result"} | {what: "call"}]. */
export function stateDifferences(expStep, gotStep) {
  const out = [];
  if (!expStep || !gotStep) return out;
  if (!same(expStep.op, gotStep.op) || !same(expStep.args, gotStep.args)) out.push({ what: "call" });
  if (!same(expStep.result, gotStep.result)) out.push({ what: "result" });
  const a = stateView(expStep.state);
  const b = stateView(gotStep.state);
  if (!same(a.freeQueue, b.freeQueue)) out.push({ what: "free_queue" });
  for (let i = 0; i < Math.max(a.blocks.length, b.blocks.length); i++) {
    const x = a.blocks[i];
    const y = b.blocks[i];
    if (!x || !y) continue;
    if (x.refCnt !== y.refCnt) out.push({ what: "ref_cnt", block: i });
    if (x.label !== y.label) out.push({ what: "contents", block: i });
  }
  for (const t of new Set([...a.tiers.map((q) => q.name), ...b.tiers.map((q) => q.name)])) {
    const x = a.tiers.find((q) => q.name === t);
    const y = b.tiers.find((q) => q.name === t);
    if (!same(x && x.keys, y && y.keys)) out.push({ what: "tier", tier: t });
  }
  for (const k of new Set([...Object.keys(a.counters), ...Object.keys(b.counters)])) {
    if (!same(a.counters[k], b.counters[k])) out.push({ what: "counter", name: k });
  }
  return out;
}
