// The page's Python: Pyodide in a (classic) Web Worker, made from a blob inside the problem page's
// sandbox frame (sandbox_frame.js): its origin is opaque and its policy allows no network, so the
// code it runs (the editor's, perhaps someone else's) cannot act as the viewer. The page
// terminates it (removes the frame) when a run takes too long, as an endless loop cannot be
// interrupted otherwise, and starts a fresh one.
//
// Messages (sandbox_protocol.js, checked on receipt): in init {pyodideURL, wheels, snapshot},
// load-editor, files, run, complete, signature, lint, fetched; out status, ready, editor-ready,
// result, answer, fatal, fetch.
import {
  AFTER_RESTORE, ED_DIR, buildSnapshotName, importRunner, installWheels, pyOptions, unpackFiles,
  writePageFiles,
} from "./python_setup.js";
import { TO_PYTHON, checked } from "./sandbox_protocol.js";

let py = null;
let editorReady = false;
let moduleName = "solution";
let chain = Promise.resolve();
// The completion engine's load, once asked (see loadEditor): not on the chain.
let editorLoad = null;

function post(msg) {
  self.postMessage(msg);
}

// ------------------------------------------------------------------ files, through the page

// Everything this worker reads (Pyodide's files, the wheels, the build's snapshot) the page
// fetches for it: `fetch` here asks the page, which answers only the files it offered (a
// snapshot only when it is the one the server publishes) and says whether it came from the
// page's Cache Storage. The browser's own fetch would be refused anyway (connect-src 'none').
const asked = new Map();
let nextAsk = 1;

function pageFetch(input) {
  let url;
  try {
    url = new URL(String(input instanceof Request ? input.url : input)).href;
  } catch {
    return Promise.resolve(new Response(null, { status: 400 })); // only absolute URLs are offered
  }
  const id = nextAsk++;
  return new Promise((resolve) => {
    asked.set(id, resolve);
    post({ type: "fetch", id, url });
  });
}

function answerFetch({ id, status, body, mime, from }) {
  const resolve = asked.get(id);
  if (!resolve) return;
  asked.delete(id);
  const headers = { "content-type": mime || "application/octet-stream", "x-kvp-from": from || "network" };
  resolve(new Response(status === 200 ? body : null, { status, headers }));
}

self.fetch = pageFetch;

// A module the page fetched, imported from a blob (scripts load from blobs only).
async function importFetched(url) {
  const r = await pageFetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  const blob = new Blob([await r.text()], { type: "text/javascript" });
  return import(/* @vite-ignore */ URL.createObjectURL(blob));
}

// ------------------------------------------------------------------ starting Python

// Python from the build's memory snapshot: `memory` may still be on its way (Pyodide compiles
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

class NoBuildSnapshot extends Error {}

async function bytesOf(response) {
  if (!response.ok) throw new Error(`${response.url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

// The snapshot the build made (scripts/build_frontend.sh), as the server publishes it: restored
// only when its name is the one this bundle computes (a snapshot of another setup never is).
// The page answers it from its Cache Storage ("snapshot") or the server ("build"), and only when
// its digest is the published one. Only the memory's status is awaited before Pyodide starts.
async function restoreBuilt(loadPyodide, pyodideURL, version, wheels, snapshot) {
  const t0 = performance.now();
  const name = await buildSnapshotName(version, wheels.map((u) => u.slice(u.lastIndexOf("/") + 1)));
  if (!snapshot || snapshot.name !== name) throw new NoBuildSnapshot(`no snapshot named ${name}`);
  const filesResponse = pageFetch(snapshot.files);
  const memResponse = await pageFetch(snapshot.memory);
  if (memResponse.status === 404) throw new NoBuildSnapshot(`${snapshot.memory}: not offered`);
  const source = memResponse.headers.get("x-kvp-from") === "cache" ? "snapshot" : "build";
  let fetchMs = 0;
  const memory = bytesOf(memResponse).then((b) => ((fetchMs = performance.now() - t0), b));
  const files = filesResponse.then(bytesOf);
  memory.catch(() => {});
  files.catch(() => {});
  const split = await restoreFrom(loadPyodide, pyodideURL, memory, files);
  return { source, [source === "snapshot" ? "read_ms" : "fetch_ms"]: fetchMs, ...split };
}

async function coldStart(loadPyodide, pyodideURL, wheels) {
  const t0 = performance.now();
  // Downloaded while Pyodide starts.
  const fetched = fetchWheels(wheels);
  fetched.catch(() => {});
  py = await loadPyodide(pyOptions(pyodideURL));
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
    const r = await pageFetch(url);
    if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
    return new Uint8Array(await r.arrayBuffer());
  }));
}

// Pyodide's two scripts, fetched by the page and imported from blobs; its wasm, standard
// library and lock file come through `fetch` (pageFetch). Pyodide refuses a classic worker,
// which it recognises by a working importScripts; this one is classic only because Chromium
// starts no module worker from a blob in an opaque origin, and loads nothing by importScripts.
async function pyodideLoader(pyodideURL) {
  self.importScripts = () => {
    throw new Error("importScripts: the page's Python loads no script");
  };
  const asm = importFetched(`${pyodideURL}pyodide.asm.mjs`).then((m) => m.default);
  asm.catch(() => {});
  const { loadPyodide, version } = await importFetched(`${pyodideURL}pyodide.mjs`);
  return { version, load: (options) => loadPyodide({ ...options, createPyodideModule: asm }) };
}

async function init({ pyodideURL, wheels, snapshot }) {
  const t0 = performance.now();
  post({ type: "status", text: "Loading Python (Pyodide)…" });
  const { load, version } = await pyodideLoader(pyodideURL);
  let split = null;
  try {
    split = await restoreBuilt(load, pyodideURL, version, wheels, snapshot);
  } catch (e) {
    if (!(e instanceof NoBuildSnapshot)) console.warn("kvp: the build's Python snapshot did not restore:", String(e));
    split = null;
  }
  if (!split) split = await coldStart(load, pyodideURL, wheels);
  split.total_ms = performance.now() - t0;
  post({ type: "ready", ms: split.total_ms, split });
}

// Completion comes second: the page asks for it once the student starts editing, so that
// unpacking jedi (4.8 MB) does not delay the first Run. It loads beside the chain, not on it:
// a Run pressed meanwhile (the usual first Run: the student clicked into the editor, then
// pressed Run) starts at its next pause instead of after it (was 1.7-9.7 s, later Runs 0.2-0.7).
// Its wheels are pure Python and land in site-packages, which a Run never imports from.
async function loadEditor(editorWheels) {
  const t0 = performance.now();
  if (editorReady || !editorWheels || !editorWheels.length) return;
  try {
    await py.loadPackage(editorWheels, { messageCallback: () => {}, errorCallback: () => {} });
    // a Run that came during the unpacking goes first: importing jedi is another second
    await new Promise((resolve) => setTimeout(resolve, 0));
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
        editorLoad = editorLoad || loadEditor(msg.editorWheels);
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
  const msg = checked(TO_PYTHON, ev.data);
  if (!msg) return;
  // The page's answers to this worker's fetches go straight through: init waits for them.
  if (msg.type === "fetched") answerFetch(msg);
  else chain = chain.then(() => handle(msg));
};
