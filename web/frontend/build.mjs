// Bundles the page scripts and the stylesheet into web/static/dist/ (see scripts/build_frontend.sh).
import * as esbuild from "esbuild";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { gzipSync } from "node:zlib";

// The page's runner is the judge's own code: its browser-safe rooms (page-files.json, written by
// build_frontend.sh from judge.browser.page_run.page_files()) become one module,
// {"judge/browser/page_run.py": text, ...}, for the worker.
const repo = resolve("../..");
const pageFiles = {
  name: "page-files",
  setup(build) {
    build.onResolve({ filter: /^page-files$/ }, () => ({ path: "page-files", namespace: "page-files" }));
    build.onLoad({ filter: /.*/, namespace: "page-files" }, () => {
      const list = JSON.parse(readFileSync(resolve(repo, "web/frontend/page-files.json"), "utf8"));
      const files = Object.fromEntries(list.map((rel) => [rel, readFileSync(resolve(repo, rel), "utf8")]));
      return { contents: `export default ${JSON.stringify(files)};`, loader: "js", watchFiles: list.map((rel) => resolve(repo, rel)) };
    });
  },
};

await esbuild.build({
  entryPoints: {
    problem: "src/problem.js",
    submission: "src/submission.js",
    pages: "src/pages.js",
    // KaTeX (270 kB): its own file, fetched only by a page whose text has math (math_loader.js)
    math: "src/math.js",
    app: "src/app.css",
  },
  outdir: "../static/dist",
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2020", "chrome100", "firefox100", "safari15"],
  // KaTeX's fonts (app.css imports its stylesheet): files beside the bundle, loaded only by a
  // page with math
  loader: { ".py": "text", ".woff2": "file", ".woff": "file", ".ttf": "file" },
  plugins: [pageFiles],
  legalComments: "none",
  logLevel: "info",
});
// The Python sandbox's two scripts, classic (not modules): the frame's (sandbox_frame.js), which
// the server writes inline into the frame's document (web/pages/sandbox.py) and allows by its
// hash, and the worker's (worker.js), which the frame starts from a blob. Chromium does not
// start a module worker from a blob in an opaque origin; a classic one may still import()
// modules from blobs, as the worker does Pyodide's.
await esbuild.build({
  entryPoints: { sandbox_frame: "src/sandbox_frame.js", worker: "src/worker.js" },
  outdir: "../static/dist",
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020", "chrome100", "firefox100", "safari15"],
  loader: { ".py": "text" },
  plugins: [pageFiles],
  legalComments: "none",
  logLevel: "info",
});
// Gzipped copies the server sends as they are (web/app.py, PRECOMPRESSED), as for Pyodide's
// files: compressing the 550 kB problem page and the worker on every cold load cost the server
// about 80 ms of CPU, on the way to the page's Python. Written here, so that no build leaves
// a stale copy beside a new bundle.
const dist = resolve("../static/dist");
for (const name of readdirSync(dist)) {
  if (name.endsWith(".js") || name.endsWith(".css")) {
    writeFileSync(resolve(dist, `${name}.gz`), gzipSync(readFileSync(resolve(dist, name)), { level: 9 }));
  }
}

// The build's Python snapshot is made under node by the same setup code the worker runs
// (src/make_snapshot.js, run by build_frontend.sh once Pyodide and the wheels are in place).
await esbuild.build({
  entryPoints: ["src/make_snapshot.js"],
  outfile: "node_modules/.kvp/make_snapshot.mjs",
  bundle: true,
  platform: "node",
  format: "esm",
  target: ["node18"],
  plugins: [pageFiles],
  legalComments: "none",
  logLevel: "warning",
});
