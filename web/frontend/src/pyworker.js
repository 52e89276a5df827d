// The page side of the Python worker: start, ask, run with a time limit, restart after a kill.

export class PyWorker {
  constructor(config, { onStatus, onReady, onEditorReady, onFatal, onSnapshotSaved }) {
    this.config = config;
    this.cb = { onStatus, onReady, onEditorReady, onFatal, onSnapshotSaved };
    this.worker = null;
    this.ready = false;
    this.editorReady = false;
    this.busy = false;
    this.files = null;
    this.pending = new Map();
    this.nextId = 1;
    this.onBusy = () => {};
    this.editorWanted = false;
  }

  // Load completion (jedi) now; called when the student starts editing or after a Run.
  wantEditor() {
    if (this.editorWanted) return;
    this.editorWanted = true;
    if (this.worker) this._sendEditor();
  }

  _sendEditor() {
    const abs = (u) => new URL(u, location.href).href;
    this.worker.postMessage({ type: "load-editor", editorWheels: (this.config.editor_wheels || []).map(abs) });
  }

  start() {
    this.ready = false;
    this.editorReady = false;
    const w = new Worker(this.config.worker, { type: "module" });
    this.worker = w;
    w.onmessage = (ev) => this._message(ev.data);
    w.onerror = (ev) => this.cb.onFatal(ev.message || "the worker failed to load");
    const base = new URL(this.config.pyodide, location.href).href;
    const abs = (u) => new URL(u, location.href).href;
    w.postMessage({
      type: "init",
      pyodideURL: base,
      wheels: this.config.wheels.map(abs),
    });
    if (this.files) w.postMessage({ type: "files", ...this.files });
    if (this.editorWanted) this._sendEditor();
  }

  setFiles(module, handbook, python) {
    this.files = { module, handbook, python };
    if (this.worker) this.worker.postMessage({ type: "files", ...this.files });
  }

  _message(msg) {
    switch (msg.type) {
      case "status":
        this.cb.onStatus(msg.text);
        break;
      case "ready":
        this.ready = true;
        this.cb.onReady(msg.ms, msg.split);
        break;
      case "snapshot-saved":
        if (this.cb.onSnapshotSaved) this.cb.onSnapshotSaved(msg);
        break;
      case "editor-ready":
        this.editorReady = true;
        this.cb.onEditorReady(msg.ms);
        break;
      case "fatal":
        this.cb.onFatal(msg.message);
        break;
      case "result":
      case "answer": {
        const p = this.pending.get(msg.id);
        if (p) {
          this.pending.delete(msg.id);
          clearTimeout(p.timer);
          p.resolve(msg);
        }
        break;
      }
      default:
        break;
    }
  }

  _request(type, payload, timeoutMs, onTimeout) {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve(onTimeout());
      }, timeoutMs);
      this.pending.set(id, { resolve, timer });
      this.worker.postMessage({ type, id, ...payload });
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
  // (terminating the worker is the only way to interrupt it). False when nothing is running.
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
    this.worker.terminate();
    for (const [, p] of this.pending) {
      clearTimeout(p.timer);
      p.resolve({ value: null, error: "restarted" });
    }
    this.pending.clear();
    this.cb.onStatus("Restarting Python…");
    this.start();
  }
}
