// TeX in statements and explanations ($...$ and $$...$$, as the handbook writes it), rendered in
// the page by KaTeX, bundled with its fonts (no request leaves the server). The server's
// Markdown keeps each formula's TeX in a span.math (web/pages/markdown.py), untouched by Markdown.
import katex from "katex";

export function renderMath(root = document) {
  for (const span of root.querySelectorAll("span.math:not([data-rendered])")) {
    const tex = span.textContent;
    try {
      katex.render(tex, span, { displayMode: span.dataset.display === "1", throwOnError: false, output: "htmlAndMathml" });
      span.dataset.rendered = "1";
      span.title = tex;
    } catch {
      // KaTeX refused it: the TeX stays as it was written, which is still readable
    }
  }
}
