// The problem page's line beside Submit (templates/_due.html): each assignment's countdown, and
// at the deadline the note of the phase it reaches ("late: counts 80 %", "closed"), without a
// reload. The server's clock decides what is late, so the count runs on it: the page's
// data-server-now against this browser's clock when the page came.
import { tr } from "./i18n.js";
import { announce } from "./layout.js";

const SECOND = 1000;

function span(ms) {
  const s = Math.max(0, Math.ceil(ms / SECOND));
  const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
  const unit = (key, n) => tr(key, { n });
  if (d) return `${unit("{n} d", d)} ${unit("{n} h", h)}`;
  if (h) return `${unit("{n} h", h)} ${unit("{n} min", m)}`;
  if (m) return `${unit("{n} min", m)} ${unit("{n} s", s % 60)}`;
  return unit("{n} s", s);
}

// The same rule as the gradebook's (web.store.assignment_book.phase).
function phaseAt(now, opens, deadline, lateUntil) {
  if (now < opens) return "not open";
  if (now <= deadline) return "open";
  return lateUntil && now <= lateUntil ? "late window" : "closed";
}

const COUNTDOWN = { "not open": "opens in {t}", open: "{t} left", "late window": "{t} left in the late window" };

function update(item, now) {
  const at = (key) => (item.dataset[key] ? Date.parse(item.dataset[key]) : NaN);
  const opens = at("opens"), deadline = at("deadline"), lateUntil = at("lateUntil");
  const phase = phaseAt(now, opens, deadline, Number.isNaN(lateUntil) ? null : lateUntil);
  const changed = item.dataset.phase !== phase;
  item.dataset.phase = phase;
  for (const node of item.querySelectorAll("[data-for-phase]")) node.hidden = !node.dataset.forPhase.split("|").includes(phase);
  const target = { "not open": opens, open: deadline, "late window": lateUntil }[phase];
  const countdown = item.querySelector("[data-countdown]");
  if (countdown) countdown.textContent = target ? `(${tr(COUNTDOWN[phase], { t: span(target - now) })})` : "";
  return changed;
}

export function followDeadlines(box = document.getElementById("due")) {
  if (!box) return;
  const skew = Date.parse(box.dataset.serverNow) - Date.now();
  const offset = Number.isNaN(skew) ? 0 : skew;
  const tick = () => {
    const now = Date.now() + offset;
    for (const item of box.querySelectorAll(".due[data-deadline]")) {
      // a phase reached while the page is open is said once (the line itself is not live)
      if (update(item, now)) {
        const note = [...item.querySelectorAll("[data-for-phase]")].find((n) => !n.hidden);
        if (note) announce(`${item.querySelector("a")?.textContent || ""}: ${note.textContent.trim()}`);
      }
    }
  };
  for (const item of box.querySelectorAll(".due[data-deadline]")) update(item, Date.now() + offset);
  setInterval(tick, SECOND);
}

// What one submission counts for in each of its author's assignments (GET /api/submissions/{id}
// `assignments`, decided by the server's clock when it was made): shown with its verdict.
export function standingNote(assignments, el) {
  if (!assignments || !assignments.length) return null;
  const pct = (f) => String(Math.round(f * 1000) / 10);
  const line = (a) => {
    const text = {
      open: tr("on time: counts in full"),
      "late window": tr("late: counts {pct} %", { pct: pct(a.counts) }),
      closed: tr("after the late window: does not count"),
      "not open": tr("before the assignment opened: does not count"),
    }[a.phase];
    return el("li", { "data-assignment": String(a.assignment), "data-phase": a.phase }, `${a.title}: `, el("strong", {}, text || a.phase));
  };
  return el("ul", { class: "standing-note" }, ...assignments.map(line));
}
