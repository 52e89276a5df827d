// The page's Python: Pyodide in a module Web Worker. The page terminates this worker when a run
// takes too long (an endless loop cannot be interrupted otherwise) and starts a fresh one.
//
// Messages in:  init {pyodideURL, wheels}, load-editor {editorWheels},
//               files {module, handbook, python (the grading Python, "3.11")},
//               run {id, spec}, complete {id, code, line, col}, signature {id, code, line, col},
//               lint {id, code}
// Messages out: status {text}, ready {ms}, editor-ready {ms}, result {id, result},
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

async function init({ pyodideURL, wheels }) {
  const t0 = performance.now();
  post({ type: "status", text: "Loading Python (Pyodide)…" });
  const { loadPyodide } = await import(/* @vite-ignore */ `${pyodideURL}pyodide.mjs`);
  // No hash randomisation, as in the server's sandbox: sets of str iterate in the same order.
  py = await loadPyodide({
    indexURL: pyodideURL, stdout: () => {}, stderr: () => {},
    env: { HOME, PYTHONHASHSEED: "0" },
  });
  post({ type: "status", text: "Loading pytest…" });
  await py.loadPackage(wheels, { messageCallback: () => {}, errorCallback: () => {} });
  py.FS.mkdirTree(`${ED_DIR}/handbook`);
  for (const [rel, text] of Object.entries(pageFiles)) {
    const path = `${PAGE_DIR}/${rel}`;
    py.FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    py.FS.writeFile(path, text);
  }
  py.runPython(
    `import sys\nsys.path.insert(0, "${PAGE_DIR}")\nimport pytest\nfrom judge.browser import page_run\n` + EDITOR_PY,
  );
  post({ type: "ready", ms: performance.now() - t0 });
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
