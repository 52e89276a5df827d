// Every page: its <time datetime="..."> elements in the reader's own zone, written one way
// whatever the browser's locale ("2 Dec 2026 03:36 (GMT+8)": web/dates.py writes the same
// text, so the server's own is already right once it knows the zone). The server writes UTC,
// which it knows, not the reader's zone, which it does not: the zone is kept in a cookie for it.
import { LANG, tr } from "./i18n.js";
import { followChanges } from "./instructor_live.js";
import { followDeadlines } from "./deadlines.js";

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
const pad = (n) => String(n).padStart(2, "0");

function parse(iso) {
  // a naive ISO time from the server is UTC
  const d = new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(iso) ? iso : `${iso}Z`);
  return Number.isNaN(d.getTime()) ? null : d;
}

// "GMT+8", "GMT-3:30", "UTC": minutes east of UTC, as dates.offset_name writes them.
export function offsetName(minutes) {
  if (!minutes) return "UTC";
  const m = Math.abs(minutes);
  return `GMT${minutes > 0 ? "+" : "-"}${Math.floor(m / 60)}${m % 60 ? `:${pad(m % 60)}` : ""}`;
}

// The time in this browser's zone without the zone's name: what a form's field holds.
export function localText(d) {
  const s = d.getSeconds();
  const clock = `${pad(d.getHours())}:${pad(d.getMinutes())}${s ? `:${pad(s)}` : ""}`;
  const month = LANG === "zh" ? String(d.getMonth() + 1) : MONTHS[d.getMonth()];
  return tr("{day} {month} {year} {clock}", { day: d.getDate(), month, year: d.getFullYear(), clock });
}

export function localTime(iso) {
  const d = parse(iso);
  return d && `${localText(d)} (${offsetName(-d.getTimezoneOffset())})`;
}

export function localTimes(root = document) {
  for (const t of root.querySelectorAll("time[datetime]")) {
    const text = localTime(t.getAttribute("datetime"));
    if (text) {
      t.title = ZONE ? `${ZONE} · ${t.getAttribute("datetime")}` : t.getAttribute("datetime");
      t.textContent = text;
    }
  }
}

// Forms marked data-local-times (templates/_time_field.html): the reader types their own time
// in the pages' own form, the fields the server filled (UTC, data-utc) are shown in it, and the
// form sends the zone's name (tz: the server decides each date's summer time) and its offset now
// (tz_offset_min, minutes east of UTC, for a name the server does not know).
export function localTimeForms(root = document) {
  const offset = -new Date().getTimezoneOffset();
  for (const form of root.querySelectorAll("form[data-local-times]")) {
    for (const input of form.querySelectorAll("input[data-local-time][data-utc]")) {
      const d = parse(input.dataset.utc);
      if (d) input.value = localText(d);
    }
    for (const el of form.querySelectorAll("[data-tz-name]")) el.textContent = ZONE ? `${ZONE}, ${offsetName(offset)}` : offsetName(offset);
    const zone = form.querySelector("input[name=tz]");
    if (zone) zone.value = ZONE;
    const minutes = form.querySelector("input[name=tz_offset_min]");
    if (minutes) minutes.value = String(offset);
  }
}

// The server writes the next page's times in this zone (a name only: no identity in it).
if (ZONE && /^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/.test(ZONE)) document.cookie = `kvp_tz=${ZONE}; path=/; max-age=31536000; samesite=lax`;

// A region that scrolls is reached by keyboard only if it can take focus (WCAG 2.1.1; axe's
// scrollable-region-focusable): each one that overflows and holds nothing focusable gets a tab
// stop, checked again when the page's content or size changes (results arrive after Run).
const FOCUSABLE = "a[href], button, input, select, textarea, [tabindex]";

function focusableScrollers() {
  for (const node of document.querySelectorAll("main pre, main .gradebook-wrap, main .statement-pane, main .result-pane, main .tests-pane")) {
    const scrolls = node.scrollWidth > node.clientWidth + 1 || node.scrollHeight > node.clientHeight + 1;
    if (scrolls && !node.hasAttribute("tabindex") && !node.querySelector(FOCUSABLE)) node.tabIndex = 0;
  }
}

let scrollCheck = 0;
const checkSoon = () => {
  cancelAnimationFrame(scrollCheck);
  scrollCheck = requestAnimationFrame(focusableScrollers);
};

localTimes();
localTimeForms();
followDeadlines();
focusableScrollers();
new MutationObserver(checkSoon).observe(document.querySelector("main") || document.body, { childList: true, subtree: true });
addEventListener("resize", checkSoon);
const live = document.getElementById("instructor-live");
if (live) followChanges(live, localTimes);
