// Loads KaTeX (dist/math.js, 270 kB) only when the page holds math the server marked
// (span.math: web/pages/markdown.py), then renders it; a page without math fetches nothing.
export function renderMathLater(url) {
  if (!url || !document.querySelector("span.math:not([data-rendered])")) return;
  import(url)
    .then((m) => m.renderMath())
    .catch((e) => console.warn("kvp: the math could not be rendered:", String(e)));
}
