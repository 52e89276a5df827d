// Follow a submission to its verdict through server restarts and dropped connections: the event
// stream while it works, and when it breaks, GET /api/submissions/{id} with growing pauses
// until the server answers again, then the stream once more from the last event seen.
import { tr } from "./i18n.js";
import { el } from "./render.js";
import { EVENTS, STREAM_ORDER } from "./vocabulary.js";

const FIRST_PAUSE_MS = 500;
const MAX_PAUSE_MS = 5000;

// A notice above the progress while the server cannot be reached; null when it can.
function connectionNotice(progress) {
  let node = null;
  return {
    lost(pauseMs) {
      if (!node) {
        node = el("p", { class: "banner warn connection-lost", role: "status" });
        progress.container.prepend(node);
      }
      node.textContent = tr("Connection to the server lost: reconnecting (next try in {s} s)… Your submission is kept; its verdict appears here once the server is back.", { s: (pauseMs / 1000).toFixed(1) });
    },
    back() {
      if (node) node.remove();
      node = null;
    },
  };
}

/** Resolves with the submission ({id, status, verdict, score, report}) once it is graded; `hooks.onLost()` runs when the server
 * stops answering (the page may let the student submit again), `hooks.onBack()` when it answers
 * again. Never rejects for a lost connection: it keeps trying. */
export function followSubmission(id, progress, onUpdate = () => {}, hooks = {}) {
  const notice = connectionNotice(progress);
  let lastEventId = "";
  let es = null;
  let finished = false;
  let checking = false;
  let pauseMs = FIRST_PAUSE_MS;
  let wasLost = false;

  return new Promise((resolve) => {
    const finish = (data) => {
      if (finished) return;
      finished = true;
      if (es) es.close();
      notice.back();
      resolve(data);
    };
    const open = () => {
      if (finished) return;
      const after = lastEventId ? `?after=${encodeURIComponent(lastEventId)}` : "";
      es = new EventSource(`/api/submissions/${id}/events${after}`);
      for (const t of STREAM_ORDER) {
        es.addEventListener(t, (ev) => {
          if (ev.lastEventId) lastEventId = ev.lastEventId;
          let data = {};
          try {
            data = JSON.parse(ev.data);
          } catch {}
          progress.event(t, data);
          onUpdate(t, data);
          // The one "done" carries the Report: the stream's end is the submission's end. A done
          // without one (a server older than this page) is followed by asking the submission.
          if (t === EVENTS.DONE) {
            if (data.report) finish({ id, status: "done", verdict: data.verdict, score: data.score, report: data.report });
            else check();
          }
        });
      }
      // The stream ended or broke: find out from the submission itself what to do next.
      es.onerror = () => {
        es.close();
        check();
      };
    };
    const check = async () => {
      if (finished || checking) return;
      checking = true;
      let data = null;
      try {
        const r = await fetch(`/api/submissions/${id}`, { cache: "no-store" });
        if (r.ok) data = await r.json();
      } catch {}
      checking = false;
      if (data === null) {
        notice.lost(pauseMs);
        if (!wasLost && hooks.onLost) hooks.onLost();
        wasLost = true;
        setTimeout(check, pauseMs);
        pauseMs = Math.min(MAX_PAUSE_MS, pauseMs * 2);
        return;
      }
      if (wasLost && hooks.onBack) hooks.onBack();
      wasLost = false;
      pauseMs = FIRST_PAUSE_MS;
      notice.back();
      if (data.status === "done") finish(data);
      else setTimeout(open, FIRST_PAUSE_MS);
    };
    open();
  });
}
