// The problem page's Python sandbox: the document of a hidden frame (served by the judge at
// /sandbox/python with this script inline and the worker's script as text beside it) in which
// the Python worker runs. Code in the editor may be someone else's (a student's code that staff
// load from a submission), so it must never run with the viewer's authority: the frame is
// sandboxed without allow-same-origin (its origin is opaque: no cookies, no Cache Storage, and
// the judge's pages do not count it as theirs) and its policy gives it, and the worker it makes
// from a blob, no network at all (connect-src 'none', scripts only from blobs). It starts the
// worker as soon as it loads (while the page's own script is still on its way), then only relays
// the declared messages (sandbox_protocol.js) between the page and the worker, checking each one.
import { FROM_PYTHON, TO_FRAME, TO_PYTHON, checked, transfers } from "./sandbox_protocol.js";

// The page that framed this document is on the judge's origin, which is this document's URL's
// own origin (the document itself has an opaque one).
const PAGE_ORIGIN = new URL(location.href).origin;
const FROM_PAGE = { ...TO_PYTHON, ...TO_FRAME };
let worker = null;

function tell(msg, transfer = []) {
  parent.postMessage(msg, PAGE_ORIGIN, transfer);
}

function boot() {
  if (self.origin !== "null") {
    // Not sandboxed after all (the header or the attribute lost): refuse rather than run code
    // with the judge's origin.
    tell({ type: "frame-error", message: "the Python sandbox is not isolated: refusing to start" });
    return;
  }
  const script = document.getElementById("worker-script").textContent;
  const url = URL.createObjectURL(new Blob([script], { type: "text/javascript" }));
  worker = new Worker(url); // classic: see build.mjs
  worker.onmessage = (ev) => {
    const msg = checked(FROM_PYTHON, ev.data);
    if (msg) tell(msg, transfers(msg));
  };
  worker.onerror = (ev) => tell({ type: "frame-error", message: ev.message || "the Python worker failed to load" });
}

addEventListener("message", (ev) => {
  if (ev.source !== parent || ev.origin !== PAGE_ORIGIN) return;
  const msg = checked(FROM_PAGE, ev.data);
  if (!msg || !worker) return;
  if (msg.type === "hello") tell({ type: "frame-ready" });
  else worker.postMessage(msg, transfers(msg));
});

if (parent !== self) {
  boot();
  if (worker) tell({ type: "frame-ready" });
}
