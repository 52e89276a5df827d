// The report's hints (judge/judging/hints.py matched them to the first failure): offered one
// level at a time, the vaguest first, each linked to the statement rule it is about. What was
// shown is counted in the browser (localStorage, per problem), not on the server.
import { el } from "./render.js";
import { LANG, tr } from "./i18n.js";

const storeKey = (problem) => `kvp:hints:${problem}`;

/** The hint levels shown so far for a problem: a set of "hint id#level". */
export function shownHints(problem) {
  try {
    return new Set(JSON.parse(localStorage.getItem(storeKey(problem)) || "[]"));
  } catch {
    return new Set();
  }
}

function remember(problem, key) {
  const seen = shownHints(problem);
  seen.add(key);
  localStorage.setItem(storeKey(problem), JSON.stringify([...seen]));
  return seen.size;
}

function levelsOf(hint) {
  const levels = hint.levels || {};
  return (levels[LANG] && levels[LANG].length ? levels[LANG] : levels.en) || [];
}

/** `ruleHref(anchor)`: the link to a statement heading (the problem page or its own page). */
export function hintBox(hints, { problem, ruleHref, onRule = null }) {
  const steps = (hints || []).flatMap((h) => levelsOf(h).map((text, i) => ({ h, i, text })));
  if (!steps.length || !problem) return null;
  const list = el("ol", { class: "hint-levels" });
  const count = el("span", { class: "hint-count" });
  const button = el("button", { type: "button", class: "btn hint-next" });
  const box = el("div", { class: "hints", "data-hints": hints.map((h) => h.id).join(" ") }, list, el("div", { class: "hint-bar" }, button, count));
  let next = 0;
  const label = () => {
    if (next >= steps.length) return null;
    if (next === 0) return tr("Show a hint");
    return steps[next].h === steps[next - 1].h ? tr("Show a more specific hint") : tr("Show another hint");
  };
  const refresh = (n) => {
    const text = label();
    button.hidden = text === null;
    if (text) button.textContent = text;
    count.textContent = tr("hints shown for this problem: {n}", { n });
  };
  button.addEventListener("click", () => {
    const { h, i, text } = steps[next++];
    const anchor = (h.rule && (h.rule[currentStatementLang()] || h.rule[LANG] || h.rule.en)) || null;
    const rule = anchor
      ? el("a", { href: ruleHref(anchor), class: "hint-rule", onclick: onRule ? (ev) => onRule(ev, anchor) : null }, tr("the statement's rule"))
      : null;
    list.append(el("li", { "data-hint": h.id, "data-level": String(i + 1) }, text, rule ? " " : null, rule ? el("span", { class: "note" }, "(", tr("about: "), rule, ")") : null));
    refresh(remember(problem, `${h.id}#${i + 1}`));
    (button.hidden ? list.lastChild : button).focus?.();
  });
  refresh(shownHints(problem).size);
  return box;
}

// The statement language the page shows (a student may read the statement in the other one).
function currentStatementLang() {
  const s = document.querySelector("article.statement:not([hidden]):not(.explanation)");
  return (s && s.dataset.lang) || LANG;
}
