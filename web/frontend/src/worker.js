// The page's Python: Pyodide in a module Web Worker. The page terminates this worker when a run
// takes too long (an endless loop cannot be interrupted otherwise) and starts a fresh one.
//
// Messages in:  init {pyodideURL, wheels}, load-editor {editorWheels},
//               files {module, handbook, python (the grading Python, "3.11")},
//               run {id, spec}, complete {id, code, line, col}, signature {id, code, line, col},
//               lint {id, code}
// Messages out: status {text}, ready {ms, split}, snapshot-saved {ms, bytes}, editor-ready {ms}, result {id, result},
//               answer {id, value}, fatal {message}
// The judge's files the page runner needs (judge/judging, judge/browser, judge/runner), bundled by build.mjs.
import pageFiles from "page-files";

const HOME = "/home/pyodide";
const ED_DIR = `${HOME}/kvp_editor`;
const PAGE_DIR = `${HOME}/page`;
let py = null;
let editorReady = false;
let moduleName = "solution";
let chain = Promise.resolve();

const EDITOR_PY = `
import json, sys
_jedi = None
def _script(code):
    global _jedi
    if _jedi is None:
        import jedi
        from jedi.api.environment import InterpreterEnvironment
        _jedi = (jedi, jedi.Project("${ED_DIR}", added_sys_path=["${ED_DIR}/handbook"]),
                 InterpreterEnvironment())
    jedi, project, env = _jedi
    return jedi.Script(code, path="${ED_DIR}/" + MODULE + ".py", project=project, environment=env)

def kvp_complete(code, line, col):
    out = []
    for c in _script(code).complete(line, col)[:150]:
        out.append({"label": c.name, "type": c.type, "complete": c.complete})
    return json.dumps(out)

def kvp_signature(code, line, col):
    out = []
    for s in _script(code).get_signatures(line, col)[:3]:
        try:
            doc = s.docstring(raw=True).strip().split("\\n\\n")[0][:400]
        except Exception:
            doc = ""
        out.append({"name": s.name, "params": [p.description.replace("param ", "", 1)
                    for p in s.params], "index": s.index, "doc": doc})
    return json.dumps(out)

def kvp_lint(code):
    # The grading Python's grammar, as Run and Submit judge it (judge/judging/syntax.py).
    from judge.judging.syntax import first_syntax_error
    e, _ = first_syntax_error(code, MODULE + ".py", GRADING_PYTHON)
    if not isinstance(e, SyntaxError):
        return "[]"
    return json.dumps([{"line": e.lineno or 1, "col": e.offset or 1,
                        "end_line": getattr(e, "end_lineno", None) or e.lineno or 1,
                        "end_col": getattr(e, "end_offset", None) or (e.offset or 1) + 1,
                        "message": e.msg}])
MODULE = "solution"
GRADING_PYTHON = None
`;

function post(msg) {
  self.postMessage(msg);
}

// A memory snapshot of this Python taken right after pytest and the page runner were imported,
// kept in the browser's Cache Storage: a reload restores it instead of unpacking the wheels and
// importing pytest again (most of the cold start). Keyed by this bundle's URL (its ?v= is the
// bundle's hash, and the page runner's files and EDITOR_PY are in the bundle), Pyodide's version
// and the wheels' URLs (their names carry their versions), so a rebuild takes a fresh one.
// The snapshot holds memory only: the files Python may still read (the wheels' modules that are
// imported later, their metadata, tracebacks' source lines) are kept beside it and written back.
const SNAP_CACHE = "kvp-python-snapshot";
const RUNNER_IMPORTS = `import sys\nsys.path.insert(0, "${PAGE_DIR}")\nimport pytest\nfrom judge.browser import page_run\n`;

async function snapshotKey(version, pyodideURL, wheels) {
  const text = [self.location.href, version, pyodideURL, ...wheels].join("\n");
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return new URL(`/kvp-python-snapshot/${hex.slice(0, 24)}/`, self.location.href).href;
}

function pyOptions(pyodideURL) {
  // No hash randomisation, as in the server's sandbox: sets of str iterate in the same order.
  return { indexURL: pyodideURL, stdout: () => {}, stderr: () => {}, env: { HOME, PYTHONHASHSEED: "0" } };
}

function writePageFiles() {
  py.FS.mkdirTree(`${ED_DIR}/handbook`);
  for (const [rel, text] of Object.entries(pageFiles)) {
    const path = `${PAGE_DIR}/${rel}`;
    py.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    py.FS.writeFile(path, text);
  }
}

// Every file under the site-packages the wheels were unpacked into, as one buffer:
// [u32 index length][index JSON: [[path, size], ...]][the files' bytes, in order].
function packFiles(root) {
  const index = [];
  const chunks = [];
  const walk = (dir) => {
    for (const name of py.FS.readdir(dir)) {
      if (name === "." || name === "..") continue;
      const path = `${dir}/${name}`;
      const mode = py.FS.lstat(path).mode;
      if (py.FS.isDir(mode)) walk(path);
      else if (py.FS.isFile(mode)) {
        const data = py.FS.readFile(path);
        index.push([path, data.length]);
        chunks.push(data);
      }
    }
  };
  walk(root);
  const head = new TextEncoder().encode(JSON.stringify(index));
  const out = new Uint8Array(4 + head.length + chunks.reduce((n, c) => n + c.length, 0));
  new DataView(out.buffer).setUint32(0, head.length, true);
  out.set(head, 4);
  let at = 4 + head.length;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

function unpackFiles(buf) {
  const bytes = new Uint8Array(buf);
  const n = new DataView(bytes.buffer).getUint32(0, true);
  const index = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + n)));
  let at = 4 + n;
  for (const [path, size] of index) {
    py.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    py.FS.writeFile(path, bytes.subarray(at, at + size));
    at += size;
  }
  return index.length;
}

async function openSnapshotCache() {
  try {
    return self.caches ? await self.caches.open(SNAP_CACHE) : null;
  } catch {
    return null; // no Cache Storage here (an insecure origin, a private window): cold starts only
  }
}

async function restore(loadPyodide, pyodideURL, cache, key) {
  const t0 = performance.now();
  const [mem, files] = await Promise.all([cache.match(`${key}memory`), cache.match(`${key}files`)]);
  if (!mem || !files) return null;
  const [memBuf, filesBuf] = await Promise.all([mem.arrayBuffer(), files.arrayBuffer()]);
  const t1 = performance.now();
  py = await loadPyodide({ ...pyOptions(pyodideURL), _loadSnapshot: new Uint8Array(memBuf) });
  const t2 = performance.now();
  unpackFiles(filesBuf);
  writePageFiles();
  // The snapshot froze random's seed: every reload would draw the same numbers, where a fresh
  // Python (and the server's sandbox) draws new ones.
  py.runPython("import sys\nif 'random' in sys.modules: sys.modules['random'].seed()");
  const t3 = performance.now();
  return { source: "snapshot", read_ms: t1 - t0, pyodide_ms: t2 - t1, files_ms: t3 - t2 };
}

async function coldStart(loadPyodide, pyodideURL, wheels, snapshot) {
  const t0 = performance.now();
  // Downloaded while Pyodide starts.
  const fetched = fetchWheels(wheels);
  fetched.catch(() => {});
  py = await loadPyodide({ ...pyOptions(pyodideURL), ...(snapshot ? { _makeSnapshot: true } : {}) });
  const t1 = performance.now();
  post({ type: "status", text: "Loading pytest…" });
  await installWheels(fetched);
  const t2 = performance.now();
  writePageFiles();
  py.runPython(RUNNER_IMPORTS + EDITOR_PY);
  const t3 = performance.now();
  return { source: "cold", pyodide_ms: t1 - t0, wheels_ms: t2 - t1, imports_ms: t3 - t2 };
}

// The runner's wheels, fetched in parallel and unpacked into site-packages by zipfile (they are
// pure Python). Not py.loadPackage: a memory snapshot refuses a Python whose loadPackage has run
// (Pyodide checks that its table of loaded packages is still empty).
function fetchWheels(wheels) {
  return Promise.all(wheels.map(async (url) => {
    const r = await fetch(url);
    if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
    return new Uint8Array(await r.arrayBuffer());
  }));
}

async function installWheels(fetched) {
  const bufs = await fetched;
  py.FS.mkdirTree("/tmp/kvp-wheels");
  bufs.forEach((b, i) => py.FS.writeFile(`/tmp/kvp-wheels/${i}.whl`, b));
  py.runPython(`import importlib, os, sysconfig, zipfile
for _w in sorted(os.listdir("/tmp/kvp-wheels")):
    with zipfile.ZipFile("/tmp/kvp-wheels/" + _w) as _z:
        _z.extractall(sysconfig.get_paths()["purelib"])
    os.remove("/tmp/kvp-wheels/" + _w)
os.rmdir("/tmp/kvp-wheels")
importlib.invalidate_caches()
del _w, _z`);
}

// Taken before any Run (the message chain waits for it), stored without holding up the next one.
function saveSnapshot(cache, key) {
  const t0 = performance.now();
  const mem = py.makeMemorySnapshot();
  const sitePackages = py.runPython("import sysconfig\nsysconfig.get_paths()['purelib']");
  const files = packFiles(sitePackages);
  const ms = performance.now() - t0;
  return (async () => {
    for (const old of await cache.keys()) {
      if (!old.url.startsWith(key)) await cache.delete(old);
    }
    await cache.put(`${key}files`, new Response(files));
    await cache.put(`${key}memory`, new Response(mem));
    post({ type: "snapshot-saved", ms, bytes: mem.length + files.length });
  })().catch((e) => console.warn("kvp: the Python snapshot was not stored:", String(e)));
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
      split = await restore(loadPyodide, pyodideURL, cache, key);
    } catch (e) {
      console.warn("kvp: the saved Python snapshot did not restore:", String(e));
      // A snapshot this Pyodide cannot restore (another build, a truncated entry): start cold
      // and take a new one.
      await cache.delete(`${key}memory`).catch(() => {});
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
  if (fresh) {
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
