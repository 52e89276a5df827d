// A problem's observation labels in the reader's language, looked up as judge/judging/labels.py
// does: exact keys first, then keys with {name} placeholders (the labels f-strings make), the
// one with the most fixed text first; what a placeholder matched is kept as it is, or given the
// table's own text for it (exact or by pattern). Pure (node's test runner checks it).

export function compileLabels(table) {
  const exact = new Map();
  const patterns = [];
  for (const [key, text] of Object.entries(table || {})) {
    const parts = key.split(/\{(\w+)\}/);
    if (parts.length === 1) {
      exact.set(key, text);
      continue;
    }
    const names = parts.filter((_, i) => i % 2 === 1);
    const body = parts.map((p, i) => (i % 2 ? "([\\s\\S]+?)" : p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))).join("");
    const fixed = parts.filter((_, i) => i % 2 === 0).join("").length;
    patterns.push({ re: new RegExp(`^${body}$`), names, text, fixed });
  }
  patterns.sort((a, b) => b.fixed - a.fixed);
  return { exact, patterns };
}

/** The translation of `label`, or null where the table has none. */
export function labelText(compiled, label) {
  const text = String(label);
  if (compiled.exact.has(text)) return compiled.exact.get(text);
  for (const { re, names, text: out } of compiled.patterns) {
    const m = text.match(re);
    if (!m) continue;
    let said = out;
    names.forEach((n, i) => {
      const v = m[i + 1];
      // a part is shorter than the label (a pattern has fixed text), so this ends
      const part = v !== text ? labelText(compiled, v) : null;
      said = said.replaceAll(`{${n}}`, part ?? v);
    });
    return said;
  }
  return null;
}
