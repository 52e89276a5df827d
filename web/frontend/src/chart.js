// The chapter's experiment as a small inline SVG line chart (no chart library): tokens computed
// per turn for each run. A table with the same numbers follows it, for screen readers and tests.
import { el } from "./render.js";
import { tr } from "./i18n.js";

const SVG = "http://www.w3.org/2000/svg";
const COLOURS = ["#8a94a3", "#2f6fdb", "#1f8a4c", "#c23b32", "#b7791f"];

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) node.setAttribute(k, String(v));
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

/** series: [{name, values: [tokens per turn], key?, dashed?}]; series of one key (the run) share a
 * colour, so the student's dashed line lies on the reference's when they agree. */
export function renderExperimentChart(series, { title = tr("Tokens computed per turn") } = {}) {
  const W = 420, H = 190, L = 46, R = 10, T = 12, B = 28;
  const keys = [...new Set(series.map((s) => s.key ?? s.name))];
  const colourOf = (s) => COLOURS[keys.indexOf(s.key ?? s.name) % COLOURS.length];
  const turns = Math.max(1, ...series.map((s) => s.values.length));
  const top = Math.max(1, ...series.flatMap((s) => s.values.filter(Number.isFinite)));
  const x = (i) => L + (turns === 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (turns - 1));
  const y = (v) => T + (H - T - B) * (1 - v / top);
  const chart = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "exp-svg", role: "img", "aria-label": title });
  chart.append(svg("title", {}, title));
  for (const f of [0, 0.5, 1]) {
    const v = Math.round(top * f);
    chart.append(svg("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "exp-grid" }),
      svg("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end", class: "exp-tick" }, v));
  }
  for (let i = 0; i < turns; i++) chart.append(svg("text", { x: x(i), y: H - 10, "text-anchor": "middle", class: "exp-tick" }, i + 1));
  chart.append(svg("text", { x: (L + W - R) / 2, y: H - 0.5, "text-anchor": "middle", class: "exp-axis" }, tr("turn")));
  series.forEach((s) => {
    const colour = colourOf(s);
    const pts = s.values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    chart.append(svg("polyline", { points: pts, fill: "none", stroke: colour, "stroke-width": 2, "stroke-dasharray": s.dashed ? "6 5" : null, "data-series": s.name }));
    s.values.forEach((v, i) => chart.append(svg("circle", { cx: x(i), cy: y(v), r: 2.5, fill: colour })));
  });
  const legend = el("div", { class: "exp-legend" }, ...series.map((s) =>
    el("span", {}, el("span", { class: `exp-swatch${s.dashed ? " dashed" : ""}`, style: `color:${colourOf(s)}` }), s.name)));
  const head = el("tr", {}, el("th", {}, tr("run")), ...Array.from({ length: turns }, (_, i) => el("th", { class: "num" }, `${tr("turn")} ${i + 1}`)));
  const rows = series.map((s) => el("tr", { "data-series": s.name }, el("th", {}, s.name), ...s.values.map((v) => el("td", { class: "num" }, String(v)))));
  const table = el("details", { class: "exp-numbers" }, el("summary", {}, tr("the numbers")),
    el("table", { class: "tests" }, el("thead", {}, head), el("tbody", {}, ...rows)));
  const fig = el("figure", { class: "exp-chart" }, el("figcaption", {}, title), legend);
  fig.append(chart, table);
  return fig;
}
