// The page side of the page's Python: start, ask, run with a time limit, restart after a kill.
//
// The code in the editor may not be the viewer's (staff load a student's submission to see why
// it fails), so Python never runs with the viewer's authority: it runs in a worker inside a
// hidden frame sandboxed without allow-same-origin (sandbox_frame.js, served with a policy that
// allows no network). The frame has an opaque origin: no cookies, no Cache Storage, no request
// of its own. Everything Python needs the page fetches for it, from a fixed list of files
// (Pyodide's, the wheels, the published snapshot), and the only thing that crosses is the
// declared messages of sandbox_protocol.js, checked on receipt on both sides.
import { FROM_FRAME, FROM_PYTHON, checked, transfers } from "./sandbox_protocol.js";
import { SnapshotStore } from "./snapshot_cache.js";

const FROM_SANDBOX = { ...FROM_PYTHON, ...FROM_FRAME };
const PYODIDE_FILES = ["pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"];
const abs = (u) => new URL(u, location.href).href;

function makeFrame(src) {
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts"); // no allow-same-origin: an opaque origin
  frame.hidden = true;
  frame.title = "Python";
  frame.tabIndex = -1;
  frame.setAttribute("aria-hidden", "true");
  frame.src = src;
  document.body.append(frame);
  return frame;
}

export class PyWorker {
  constructor(config, { onStatus, onReady, onEditorReady, onFatal, onSnapshotSaved }) {
    this.config = config;
    this.cb = { onStatus, onReady, onEditorReady, onFatal, onSnapshotSaved };
    this.frame = null;
    this.ready = false;
    this.editorReady = false;
    this.busy = false;
    this.files = null;
    this.pending = new Map();
    this.nextId = 1;
    this.onBusy = () => {};
    this.editorWanted = false;
    this.pyodideURL = abs(config.pyodide);
    this.snapshots = new SnapshotStore(config.snapshot);
    this.offered = new Set([...PYODIDE_FILES.map((f) => this.pyodideURL + f),
      ...(config.wheels || []).map(abs), ...(config.editor_wheels || []).map(abs)]);
    addEventListener("message", (ev) => this._fromFrame(ev));
  }

  // Load completion (jedi) now; called when the student starts editing or after a Run.
  wantEditor() {
    if (this.editorWanted) return;
    this.editorWanted = true;
    if (this.frame) this._sendEditor();
  }

  _sendEditor() {
    this._post({ type: "load-editor", editorWheels: (this.config.editor_wheels || []).map(abs) });
  }

  start() {
    this.ready = false;
    this.editorReady = false;
    this.outbox = [];
    this.listening = false;
    this.early = this._prefetch();
    this.frame = this._pageFrame() || makeFrame(this.config.sandbox);
    // It may have loaded, and said so, before this listened: ask again (lost if it has not).
    this.frame.contentWindow.postMessage({ type: "hello" }, "*");
    const s = this.config.snapshot;
    this._post({
      type: "init",
      pyodideURL: this.pyodideURL,
      wheels: (this.config.wheels || []).map(abs),
      snapshot: s ? { name: s.name, memory: abs(s.memory), files: abs(s.files) } : null,
    });
    if (this.files) this._post({ type: "files", ...this.files });
    if (this.editorWanted) this._sendEditor();
  }

  // The first start's frame is in the page's HTML (problem.html), so that it and its worker load
  // while the page's own script does; a restart makes a fresh one.
  _pageFrame() {
    const frame = document.getElementById("py-sandbox");
    if (!frame || frame.dataset.used) return null;
    frame.dataset.used = "1";
    return frame;
  }

  // What every start asks for first, fetched while the frame and its worker load.
  _prefetch() {
    const s = this.config.snapshot;
    const urls = [...PYODIDE_FILES.map((f) => this.pyodideURL + f), ...(s ? [abs(s.memory), abs(s.files)] : [])];
    const early = new Map();
    for (const url of urls) {
      const answer = this._fetchOffered(url);
      answer.catch(() => {});
      early.set(url, answer);
    }
    return early;
  }

  setFiles(module, handbook, python) {
    this.files = { module, handbook, python };
    if (this.frame) this._post({ type: "files", ...this.files });
  }

  // Held until the frame listens and has its worker.
  _post(msg) {
    if (!this.listening) this.outbox.push(msg);
    else this.frame.contentWindow.postMessage(msg, "*", transfers(msg)); // "*": an opaque origin has no name
  }

  _fromFrame(ev) {
    if (!this.frame || ev.source !== this.frame.contentWindow || ev.origin !== "null") return;
    const msg = checked(FROM_SANDBOX, ev.data);
    if (msg) this._message(msg);
  }

  _listening() {
    if (this.listening) return; // said at load and in answer to hello
    this.listening = true;
    for (const msg of this.outbox.splice(0)) this._post(msg);
  }

  // Only the files offered, each fetched by the page; a snapshot only as published.
  async _fetchOffered(url) {
    if (this.snapshots.has(url)) return this.snapshots.answer(url);
    if (!this.offered.has(url)) {
      console.warn("kvp: the page's Python asked for a file it is not offered:", url);
      return { status: 403 };
    }
    const r = await fetch(url);
    if (!r.ok) return { status: r.status };
    return { status: 200, body: await r.arrayBuffer(), mime: r.headers.get("content-type") || "" };
  }

  async _answerFetch({ id, url }) {
    const frame = this.frame;
    const early = this.early.get(url);
    this.early.delete(url);
    let answer;
    try {
      answer = await (early || this._fetchOffered(url));
    } catch {
      answer = { status: 502 };
    }
    if (this.frame === frame) this._post({ type: "fetched", id, ...answer });
  }

  _message(msg) {
    switch (msg.type) {
      case "frame-ready":
        this._listening();
        break;
      case "frame-error":
      case "fatal":
        this.cb.onFatal(msg.message);
        break;
      case "fetch":
        this._answerFetch(msg);
        break;
      case "status":
        this.cb.onStatus(msg.text);
        break;
      case "ready":
        this.ready = true;
        this.cb.onReady(msg.ms, msg.split);
        this._keepSnapshot();
        break;
      case "editor-ready":
        this.editorReady = true;
        this.cb.onEditorReady(msg.ms);
        break;
      case "result":
      case "answer":
        this._settle(msg);
        break;
      default:
        break;
    }
  }

  // After Python is ready, so that storing it never delays a Run.
  _keepSnapshot() {
    this.snapshots.keep().then((saved) => {
      if (saved && this.cb.onSnapshotSaved) this.cb.onSnapshotSaved(saved);
    }).catch((e) => console.warn("kvp: the Python snapshot was not stored:", String(e)));
  }

  _settle(msg) {
    const p = this.pending.get(msg.id);
    if (!p) return;
    this.pending.delete(msg.id);
    clearTimeout(p.timer);
    p.resolve(msg);
  }

  _request(type, payload, timeoutMs, onTimeout) {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve(onTimeout());
      }, timeoutMs);
      this.pending.set(id, { resolve, timer });
      this._post({ type, id, ...payload });
    });
  }

  // A small question (completion, signature, lint): null if no answer in time.
  async ask(type, payload, timeoutMs = 1500) {
    if (!this.ready || this.busy) return null;
    const msg = await this._request(type, payload, timeoutMs, () => ({ value: null }));
    return msg.value;
  }

  // Run the tests; {result} or {error} or {timedOut: true} (then Python is restarted).
  async run(spec, timeoutS) {
    this.busy = true;
    this.onBusy();
    const msg = await this._request("run", { spec }, timeoutS * 1000, () => ({ timedOut: true }));
    this.busy = false;
    if (msg.timedOut || msg.stopped) this.restart();
    this.onBusy();
    return msg;
  }

  // The student's Stop: the running Run answers {stopped: true} at once, and Python is restarted
  // (removing the frame, and with it the worker, is the only way to interrupt it). False when
  // nothing is running.
  stop() {
    if (!this.busy) return false;
    for (const [, p] of this.pending) {
      clearTimeout(p.timer);
      p.resolve({ stopped: true, value: null });
    }
    this.pending.clear();
    return true;
  }

  restart() {
    this.frame.remove();
    this.frame = null;
    for (const [, p] of this.pending) {
      clearTimeout(p.timer);
      p.resolve({ value: null, error: "restarted" });
    }
    this.pending.clear();
    this.cb.onStatus("Restarting Python…");
    this.start();
  }
}
