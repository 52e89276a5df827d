// What the timeline picture shows, computed from a trace without the DOM (node unit tests run
// this file). A trace is {expected: [step], got: [step], diverges_at}; a step is
// {op, args, result, state}; state holds free_queue (front first), ref_cnt (per block), which
// prefix each block holds, the host (and disk) tier's keys in LRU order, and counters.

// Names the tracer may use for "which prefix each block holds": a list per block or {block: label}.
const LABEL_KEYS = ["block_labels", "labels", "prefixes", "holds", "hash_labels", "block_prefix"];
const TIER_KEYS = [["host", ["host", "host_keys", "host_lru"]], ["disk", ["disk", "disk_keys", "disk_lru"]]];

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

/** Index of the first step where the two traces differ (op, args, result or state), or null. */
export function firstDifference(expected, got) {
  const n = Math.max(expected.length, got.length);
  for (let i = 0; i < n; i++) if (!same(expected[i], got[i])) return i;
  return null;
}

/** The step the picture opens on: the trace's own diverges_at, else the first difference. */
export function divergesAt(trace) {
  const e = trace.expected || [];
  const g = trace.got || [];
  if (Number.isInteger(trace.diverges_at) && trace.diverges_at >= 0) return trace.diverges_at;
  const d = firstDifference(e, g);
  return d === null ? Math.max(0, Math.max(e.length, g.length) - 1) : d;
}

/** What differs at step i, so the picture can mark it: a set of part names
 * ("op", "args", "result", "free_queue", "block:3", "tier:host", "counter:num_hits", "missing"). */
export function stepDifferences(expStep, gotStep) {
  const out = new Set();
  if (!expStep || !gotStep) {
    if (expStep || gotStep) out.add("missing");
    return out;
  }
  for (const k of ["op", "args", "result"]) if (!same(expStep[k], gotStep[k])) out.add(k);
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
  else if (a && typeof a === "object") inner = Object.entries(a).map(([k, v]) => `${k}=${short(v)}`).join(", ");
  else if (a !== undefined && a !== null) inner = short(a);
  return `${step.op}(${inner})`;
}

export function resultText(step) {
  if (!step || step.result === undefined || step.result === null) return "";
  return short(step.result);
}
