// The page's Python: Pyodide in a module Web Worker. The page terminates this worker when a run
// takes too long (an endless loop cannot be interrupted otherwise) and starts a fresh one.
//
// Messages in:  init {pyodideURL, wheels}, load-editor {editorWheels},
//               files {module, handbook, python (the grading Python, "3.11")},
//               run {id, spec}, complete {id, code, line, col}, signature {id, code, line, col},
//               lint {id, code}
// Messages out: status {text}, ready {ms, split}, snapshot-saved {ms, bytes}, editor-ready {ms}, result {id, result},
//               answer {id, value}, fatal {message}
import {
  AFTER_RESTORE, ED_DIR, buildSnapshotName, importRunner, installWheels, packFiles, pyOptions,
  sitePackages, unpackFiles, writePageFiles,
} from "./python_setup.js";

let py = null;
let editorReady = false;
let moduleName = "solution";
let chain = Promise.resolve();

function post(msg) {
  self.postMessage(msg);
}

// A memory snapshot of this Python taken right after pytest and the page runner were imported,
// kept in the browser's Cache Storage: a reload restores it instead of unpacking the wheels and
// importing pytest again (most of the cold start). Keyed by this bundle's URL (its ?v= is the
// bundle's hash, and the page runner's files and EDITOR_PY are in the bundle), Pyodide's version
// and the wheels' URLs (their names carry their versions), so a rebuild takes a fresh one.
// A first visit finds the same snapshot made by the build (make_snapshot.js) beside Pyodide, and
// keeps a copy of it in Cache Storage; only where that is missing does it start Python cold.
const SNAP_CACHE = "kvp-python-snapshot";

async function snapshotKey(version, pyodideURL, wheels) {
  const text = [self.location.href, version, pyodideURL, ...wheels].join("\n");
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return new URL(`/kvp-python-snapshot/${hex.slice(0, 24)}/`, self.location.href).href;
}

async function openSnapshotCache() {
  try {
    return self.caches ? await self.caches.open(SNAP_CACHE) : null;
  } catch {
    return null; // no Cache Storage here (an insecure origin, a private window): the build's snapshot each time
  }
}

// Python from a memory snapshot: `memory` may still be downloading (Pyodide fetches and compiles
// its wasm meanwhile), `files` is the packed site-packages that goes with it.
async function restoreFrom(loadPyodide, pyodideURL, memory, files) {
  const t0 = performance.now();
  py = await loadPyodide({ ...pyOptions(pyodideURL), _loadSnapshot: memory });
  const t1 = performance.now();
  unpackFiles(py, await files);
  // The page runner's own files: not in the snapshot's memory, and tracebacks and later imports
  // read them.
  writePageFiles(py);
  py.runPython(AFTER_RESTORE);
  return { pyodide_ms: t1 - t0, files_ms: performance.now() - t1 };
}

async function restoreCached(loadPyodide, pyodideURL, cache, key) {
  const t0 = performance.now();
  const [mem, files] = await Promise.all([cache.match(`${key}memory`), cache.match(`${key}files`)]);
  if (!mem || !files) return null;
  const [memBuf, filesBuf] = await Promise.all([mem.arrayBuffer(), files.arrayBuffer()]);
  const t1 = performance.now();
  const split = await restoreFrom(loadPyodide, pyodideURL, new Uint8Array(memBuf), filesBuf);
  return { source: "snapshot", read_ms: t1 - t0, ...split };
}

class NoBuildSnapshot extends Error {}

async function bytesOf(response) {
  if (!response.ok) throw new Error(`${response.url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

// The snapshot the build made (scripts/build_frontend.sh), next to Pyodide, named by what made it.
// Only its answer's status is awaited before Pyodide starts (a build without one goes cold at
// once); its body downloads while Pyodide fetches and compiles the wasm.
async function restoreBuilt(loadPyodide, pyodideURL, version, wheels) {
  const t0 = performance.now();
  const name = await buildSnapshotName(version, wheels.map((u) => u.slice(u.lastIndexOf("/") + 1)));
  const base = new URL(`../snapshot/${name}`, pyodideURL).href;
  const filesResponse = fetch(`${base}.files`);
  filesResponse.catch(() => {});
  const memResponse = await fetch(`${base}.memory`);
  if (memResponse.status === 404) throw new NoBuildSnapshot(`${base}.memory: not built`);
  let fetchMs = 0;
  const memory = bytesOf(memResponse).then((b) => ((fetchMs = performance.now() - t0), b));
  const files = filesResponse.then(bytesOf);
  memory.catch(() => {});
  files.catch(() => {});
  const split = await restoreFrom(loadPyodide, pyodideURL, memory, files);
  return { split: { source: "build", fetch_ms: fetchMs, ...split }, memory: await memory, files: await files };
}

async function coldStart(loadPyodide, pyodideURL, wheels, snapshot) {
  const t0 = performance.now();
  // Downloaded while Pyodide starts.
  const fetched = fetchWheels(wheels);
  fetched.catch(() => {});
  py = await loadPyodide({ ...pyOptions(pyodideURL), ...(snapshot ? { _makeSnapshot: true } : {}) });
  const t1 = performance.now();
  post({ type: "status", text: "Loading pytest…" });
  installWheels(py, await fetched);
  const t2 = performance.now();
  importRunner(py);
  const t3 = performance.now();
  return { source: "cold", pyodide_ms: t1 - t0, wheels_ms: t2 - t1, imports_ms: t3 - t2 };
}

function fetchWheels(wheels) {
  return Promise.all(wheels.map(async (url) => {
    const r = await fetch(url);
    if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
    return new Uint8Array(await r.arrayBuffer());
  }));
}

async function store(cache, key, mem, files, ms) {
  for (const old of await cache.keys()) {
    if (!old.url.startsWith(key)) await cache.delete(old);
  }
  await cache.put(`${key}files`, new Response(files));
  await cache.put(`${key}memory`, new Response(mem));
  post({ type: "snapshot-saved", ms, bytes: mem.length + files.length });
}

// Taken before any Run (the message chain waits for it), stored without holding up the next one.
function saveSnapshot(cache, key) {
  const t0 = performance.now();
  const mem = py.makeMemorySnapshot();
  const files = packFiles(py, sitePackages(py));
  store(cache, key, mem, files, performance.now() - t0)
    .catch((e) => console.warn("kvp: the Python snapshot was not stored:", String(e)));
}

async function init({ pyodideURL, wheels }) {
  const t0 = performance.now();
  post({ type: "status", text: "Loading Python (Pyodide)…" });
  const { loadPyodide, version } = await import(/* @vite-ignore */ `${pyodideURL}pyodide.mjs`);
  const cache = await openSnapshotCache();
  const key = cache ? await snapshotKey(version, pyodideURL, wheels) : null;
  let split = null;
  if (cache) {
    try {
      split = await restoreCached(loadPyodide, pyodideURL, cache, key);
    } catch (e) {
      console.warn("kvp: the saved Python snapshot did not restore:", String(e));
      // A snapshot this Pyodide cannot restore (another build, a truncated entry): start from
      // the build's, or cold, and keep a new one.
      await cache.delete(`${key}memory`).catch(() => {});
      split = null;
    }
  }
  let built = null;
  if (!split) {
    try {
      built = await restoreBuilt(loadPyodide, pyodideURL, version, wheels);
      split = built.split;
    } catch (e) {
      if (!(e instanceof NoBuildSnapshot)) console.warn("kvp: the build's Python snapshot did not restore:", String(e));
      built = null;
      split = null;
    }
  }
  let fresh = false;
  if (!split) {
    split = await coldStart(loadPyodide, pyodideURL, wheels, !!cache);
    fresh = !!cache;
  }
  split.total_ms = performance.now() - t0;
  post({ type: "ready", ms: split.total_ms, split });
  if (built && cache) {
    // The build's snapshot, kept for the next visit as a cold start's would be; after the first
    // idle moment, so that it never delays a Run.
    setTimeout(() => store(cache, key, built.memory, built.files, 0)
      .catch((e) => console.warn("kvp: the Python snapshot was not stored:", String(e))), 0);
  } else if (fresh) {
    try {
      saveSnapshot(cache, key);
    } catch (e) {
      // Python holds something a snapshot cannot carry: the next load starts cold again.
      console.warn("kvp: no Python snapshot taken:", String(e));
    }
  }
}

// Completion comes second: the page asks for it once the student starts editing, so that
// unpacking jedi (4.8 MB) does not delay the first Run.
async function loadEditor(editorWheels) {
  const t0 = performance.now();
  if (editorReady || !editorWheels || !editorWheels.length) return;
  try {
    await py.loadPackage(editorWheels, { messageCallback: () => {}, errorCallback: () => {} });
    py.runPython("import jedi");
    editorReady = true;
    post({ type: "editor-ready", ms: performance.now() - t0 });
  } catch (e) {
    post({ type: "status", text: `Completion is unavailable: ${e}` });
  }
}

function setFiles({ module, handbook, python }) {
  moduleName = module;
  for (const f of py.FS.readdir(`${ED_DIR}/handbook`)) {
    if (f.endsWith(".py")) py.FS.unlink(`${ED_DIR}/handbook/${f}`);
  }
  for (const [name, text] of Object.entries(handbook || {})) {
    py.FS.writeFile(`${ED_DIR}/handbook/${name}.py`, text);
  }
  py.globals.set("MODULE", module);
  py.globals.set("GRADING_PYTHON", python ? String(python) : undefined);
}

function call(fn, ...args) {
  const f = py.globals.get(fn);
  try {
    return JSON.parse(f(...args));
  } finally {
    f.destroy();
  }
}

function run({ id, spec }) {
  const t0 = performance.now();
  py.globals.set("kvp_spec_json", JSON.stringify({ ...spec, workdir: "/tmp/kvp-run" }));
  const text = py.runPython(
    "import json as _j\nfrom judge.judging.bounded import strict_dumps as _dumps\n" +
      "_dumps(page_run.run(_j.loads(kvp_spec_json)))",
  );
  const result = JSON.parse(text);
  result.timings = { ...(result.timings || {}), browser_ms: performance.now() - t0 };
  post({ type: "result", id, result });
}

async function handle(msg) {
  try {
    switch (msg.type) {
      case "init":
        await init(msg);
        break;
      case "files":
        setFiles(msg);
        break;
      case "load-editor":
        await loadEditor(msg.editorWheels);
        break;
      case "run":
        run(msg);
        break;
      case "lint":
        post({ type: "answer", id: msg.id, value: call("kvp_lint", msg.code) });
        break;
      case "complete":
      case "signature":
        if (!editorReady) {
          post({ type: "answer", id: msg.id, value: [] });
        } else {
          const fn = msg.type === "complete" ? "kvp_complete" : "kvp_signature";
          post({ type: "answer", id: msg.id, value: call(fn, msg.code, msg.line, msg.col) });
        }
        break;
      default:
        break;
    }
  } catch (e) {
    if (msg.type === "init") post({ type: "fatal", message: String(e && e.message ? e.message : e) });
    else if (msg.type === "run") {
      post({ type: "result", id: msg.id, error: String(e && e.message ? e.message : e) });
    } else post({ type: "answer", id: msg.id, value: [], error: String(e) });
  }
}

self.onmessage = (ev) => {
  chain = chain.then(() => handle(ev.data));
};
