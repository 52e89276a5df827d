// Every page: its <time datetime="..."> elements in the reader's own time zone and language (the
// server writes UTC, which it knows, not the reader's zone, which it does not).
import { LANG } from "./i18n.js";

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

localTimes();
