// The page's words in the visitor's language (the <html lang> the server chose), looked up in
// the judge's one table per language (judge/messages/zh.json, keyed by the English text, which
// the command line and the server's pages use too); esbuild bundles the JSON.
import ZH from "../../../judge/messages/zh.json";
import { compileLabels, labelText } from "./labels.js";

const lang = (document.documentElement.lang || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
export const LANG = lang;

export function tr(text, vars = {}) {
  let out = (lang === "zh" && ZH[text]) || text;
  for (const [k, v] of Object.entries(vars)) out = out.replaceAll(`{${k}}`, v);
  return out;
}

// The problem's own observation labels (GET /api/problems/{id} `labels`, its labels.zh.json),
// looked up as judge/judging/labels.py does (labels.js), then in the table of words.
let LABELS = compileLabels({});

export function setLabels(tables) {
  LABELS = compileLabels((tables && tables[lang]) || {});
}

/** An observation label in the reader's language: the problem's table, then the table of
 * words, else the English the test wrote. */
export function trLabel(label) {
  if (lang !== "zh" || label === null || label === undefined) return label;
  const text = String(label);
  return labelText(LABELS, text) ?? (ZH[text] || text);
}
