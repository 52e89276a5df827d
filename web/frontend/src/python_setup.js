// How the page's Python is set up before its first Run, shared by the worker (worker.js) and the
// build (make_snapshot.js, run under node by scripts/build_frontend.sh): the build takes a memory
// snapshot of exactly the Python the worker would make, so a first visit restores it instead of
// importing pytest. Whatever changes here changes the snapshot's name (buildSnapshotName), so a
// snapshot of another setup is never restored.
// The judge's files the page runner needs (judge/judging, judge/browser, judge/runner), bundled by build.mjs.
import pageFiles from "page-files";

export const HOME = "/home/pyodide";
export const ED_DIR = `${HOME}/kvp_editor`;
export const PAGE_DIR = `${HOME}/page`;

export const EDITOR_PY = `
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

export const RUNNER_IMPORTS = `import sys\nsys.path.insert(0, "${PAGE_DIR}")\nimport pytest\nfrom judge.browser import page_run\n`;

// Run right after a snapshot is restored. The snapshot froze random's seed (every first visit
// would draw the same numbers, where a fresh Python and the server's sandbox draw new ones) and
// the time zone of the machine that took it (the build's, for the build's snapshot).
export const AFTER_RESTORE = "import sys, time\nif 'random' in sys.modules: sys.modules['random'].seed()\nif hasattr(time, 'tzset'): time.tzset()";

export function pyOptions(pyodideURL) {
  // No hash randomisation, as in the server's sandbox: sets of str iterate in the same order.
  return { indexURL: pyodideURL, stdout: () => {}, stderr: () => {}, env: { HOME, PYTHONHASHSEED: "0" } };
}

export function writePageFiles(py) {
  py.FS.mkdirTree(`${ED_DIR}/handbook`);
  for (const [rel, text] of Object.entries(pageFiles)) {
    const path = `${PAGE_DIR}/${rel}`;
    py.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    py.FS.writeFile(path, text);
  }
}

// The runner's wheels (pure Python), unpacked into site-packages by zipfile. Not py.loadPackage:
// a memory snapshot refuses a Python whose loadPackage has run (Pyodide checks that its table of
// loaded packages is still empty).
export function installWheels(py, bufs) {
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

// What a Run needs imported: the part of the start a snapshot saves.
export function importRunner(py) {
  writePageFiles(py);
  py.runPython(RUNNER_IMPORTS + EDITOR_PY);
}

export function sitePackages(py) {
  return py.runPython("import sysconfig\nsysconfig.get_paths()['purelib']");
}

// Every file under the site-packages the wheels were unpacked into, as one buffer:
// [u32 index length][index JSON: [[path, size], ...]][the files' bytes, in order].
// The snapshot holds memory only: the files Python may still read (the wheels' modules that are
// imported later, their metadata, tracebacks' source lines) travel beside it and are written back.
export function packFiles(py, root) {
  const index = [];
  const chunks = [];
  const walk = (dir) => {
    for (const name of [...py.FS.readdir(dir)].sort()) {
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

export function unpackFiles(py, buf) {
  const bytes = new Uint8Array(buf);
  const n = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true);
  const index = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + n)));
  let at = 4 + n;
  for (const [path, size] of index) {
    py.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    py.FS.writeFile(path, bytes.subarray(at, at + size));
    at += size;
  }
  return index.length;
}

// Four 32-bit FNV-1a-style hashes of the text's UTF-16 code units, each with its own offset and
// odd multiplier: 128 bits, the same in node and every browser. Not crypto.subtle, which only a secure context has (a page
// served over plain http from a LAN address has none, and needs the build's snapshot most: it has
// no Cache Storage either). A name tells builds apart; it guards against no one.
function hash128(text) {
  const out = [];
  for (const [seed, mul] of [[0x811c9dc5, 0x01000193], [0x050c5d1f, 0x5bd1e995],
    [0x2f8e4a6b, 0x9e3779b1], [0x6a09e667, 0x85ebca6b]]) {
    let h = seed >>> 0;
    for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), mul) >>> 0;
    out.push(h.toString(16).padStart(8, "0"));
  }
  return out.join("");
}

// The build's snapshot is named by what made it: Pyodide's version, the runner wheels (their file
// names carry their versions), the Python run and the page runner's files. The worker computes
// the same name from its own bundle and asks for that file only, so a snapshot left over from
// another build (a half-finished rebuild) is never restored: it is simply not found.
export async function buildSnapshotName(version, wheelNames) {
  const text = JSON.stringify([version, wheelNames, pyOptions(""), EDITOR_PY, RUNNER_IMPORTS, pageFiles]);
  return `python-${hash128(`${text.length}\n${text}`)}`;
}
