// The page's words in the visitor's language (the <html lang> the server chose), looked up in
// the judge's one table per language (judge/messages/zh.json, keyed by the English text, which
// the command line and the server's pages use too); esbuild bundles the JSON.
import ZH from "../../../judge/messages/zh.json";

const lang = (document.documentElement.lang || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
export const LANG = lang;

export function tr(text, vars = {}) {
  let out = (lang === "zh" && ZH[text]) || text;
  for (const [k, v] of Object.entries(vars)) out = out.replaceAll(`{${k}}`, v);
  return out;
}
