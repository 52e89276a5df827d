// Bundles the page scripts and the stylesheet into web/static/dist/ (see scripts/build_frontend.sh).
import * as esbuild from "esbuild";

await esbuild.build({
  entryPoints: {
    problem: "src/problem.js",
    submission: "src/submission.js",
    worker: "src/worker.js",
    app: "src/app.css",
  },
  outdir: "../static/dist",
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2020", "chrome100", "firefox100", "safari15"],
  loader: { ".py": "text" },
  legalComments: "none",
  logLevel: "info",
});
