// Every page: its <time datetime="..."> elements in the reader's own time zone and language (the
// server writes UTC, which it knows, not the reader's zone, which it does not).
import { LANG } from "./i18n.js";
import { followChanges } from "./instructor_live.js";

export function localTime(iso) {
  // a naive ISO time from the server is UTC
  const d = new Date(/[zZ]|[+-]\d\d:?\d\d$/.test(iso) ? iso : `${iso}Z`);
  if (Number.isNaN(d.getTime())) return null;
  return d.toLocaleString(LANG === "zh" ? "zh-CN" : "en-GB", { year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short" });
}

export function localTimes(root = document) {
  for (const t of root.querySelectorAll("time[datetime]")) {
    const text = localTime(t.getAttribute("datetime"));
    if (text) {
      t.title = t.getAttribute("datetime");
      t.textContent = text;
    }
  }
}

const pad = (n) => String(n).padStart(2, "0");

function inputValue(d) {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// Forms marked data-local-times: a datetime-local input carries no zone, so the reader types
// their own time, the inputs the server filled (in UTC, data-utc) are shown in it, and the
// form sends the zone's offset (minutes east of UTC, at the deadline's date) for the server.
export function localTimeForms(root = document) {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
  for (const form of root.querySelectorAll("form[data-local-times]")) {
    for (const input of form.querySelectorAll("input[type=datetime-local][data-utc]")) {
      const d = new Date(input.dataset.utc);
      if (!Number.isNaN(d.getTime())) input.value = inputValue(d);
    }
    for (const el of form.querySelectorAll("[data-tz-name]")) el.textContent = zone;
    const offset = form.querySelector("input[name=tz_offset_min]");
    const sync = () => {
      const ref = form.querySelector("input[name=deadline]");
      const d = ref && ref.value ? new Date(ref.value) : new Date();
      offset.value = String(-(Number.isNaN(d.getTime()) ? new Date() : d).getTimezoneOffset());
    };
    sync();
    form.addEventListener("submit", sync);
  }
}

localTimes();
localTimeForms();
const live = document.getElementById("instructor-live");
if (live) followChanges(live, localTimes);
