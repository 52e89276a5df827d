// Run under node by scripts/build_frontend.sh (bundled by build.mjs): starts the same Pyodide the
// page loads, sets it up exactly as the page's worker does on a cold start (python_setup.js), and
// writes its memory snapshot and the packed site-packages beside Pyodide:
//   web/static/vendor/snapshot/<name>.memory, <name>.files (and each gzipped)
// A first visit then restores it (worker.js, restoreBuilt) instead of importing pytest. Pyodide
// documents its snapshots as specific to one Pyodide build, not to where they were taken: the page
// loads the very files this script loads (web/static/vendor/pyodide/ is copied from node_modules).
//
// Usage: node make_snapshot.mjs <web/static/vendor>
import { readFileSync, writeFileSync, mkdirSync, readdirSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";
import { buildSnapshotName, importRunner, installWheels, packFiles, pyOptions, sitePackages } from "./python_setup.js";

const vendor = process.argv[2];
const pyodideDir = join(vendor, "pyodide") + "/";
const manifest = JSON.parse(readFileSync(join(vendor, "manifest.json"), "utf8"));
const { loadPyodide, version } = await import(pathToFileURL(join(pyodideDir, "pyodide.mjs")).href);
if (version !== manifest.pyodide_version) throw new Error(`Pyodide ${version} here, ${manifest.pyodide_version} in the manifest`);

const t0 = performance.now();
// Emscripten names the program after node's argv[1] (this script's path on the build machine),
// which Python keeps in sys.executable, sys.orig_argv and os.environ["_"], and the snapshot with
// them; a browser's is "./this.program", as the page's Python must see.
process.argv.splice(1, process.argv.length - 1, "./this.program");
const py = await loadPyodide({ ...pyOptions(pyodideDir), _makeSnapshot: true });
installWheels(py, manifest.wheels.map((w) => readFileSync(join(vendor, "wheels", w))));
importRunner(py);
const memory = py.makeMemorySnapshot();
const files = packFiles(py, sitePackages(py));

const name = await buildSnapshotName(version, manifest.wheels);
const out = join(vendor, "snapshot");
mkdirSync(out, { recursive: true });
for (const old of readdirSync(out)) unlinkSync(join(out, old)); // another build's: never asked for again
writeFileSync(join(out, `${name}.memory`), memory);
// Sent as it is to browsers that accept gzip (web/app.py, PRECOMPRESSED): the memory is mostly
// zeros (31 -> 8 MB).
writeFileSync(join(out, `${name}.memory.gz`), gzipSync(memory, { level: 9 }));
writeFileSync(join(out, `${name}.files`), files);
writeFileSync(join(out, `${name}.files.gz`), gzipSync(files, { level: 9 }));
console.log(`snapshot: ${name} (${(memory.length / 1e6).toFixed(1)} MB memory, ` +
  `${(files.length / 1e6).toFixed(1)} MB files) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
