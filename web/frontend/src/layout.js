// The problem page's layout helpers: below ~900 px one of Statement / Code / Result is shown at
// a time (tabs the template draws, .pane-tabs), and one polite live region (#announce) that says
// a verdict in a short sentence, so a screen reader does not read the whole panel.
import { tr } from "./i18n.js";

const NARROW = "(max-width: 900px)";

export function mobileTabs(layout) {
  const bar = document.querySelector(".pane-tabs");
  const buttons = bar ? [...bar.querySelectorAll("[data-pane]")] : [];
  const show = (name) => {
    if (!layout) return;
    layout.dataset.pane = name;
    for (const b of buttons) {
      const on = b.dataset.pane === name;
      b.classList.toggle("active", on);
      b.setAttribute("aria-selected", String(on));
      b.tabIndex = on ? 0 : -1;
    }
  };
  for (const b of buttons) {
    b.textContent = tr(b.dataset.i18n || b.textContent);
    b.addEventListener("click", () => show(b.dataset.pane));
    b.addEventListener("keydown", (ev) => {
      if (ev.key !== "ArrowLeft" && ev.key !== "ArrowRight") return;
      ev.preventDefault();
      const i = buttons.indexOf(b) + (ev.key === "ArrowRight" ? 1 : -1);
      const next = buttons[(i + buttons.length) % buttons.length];
      show(next.dataset.pane);
      next.focus();
    });
  }
  show("code");
  return { show, narrow: () => matchMedia(NARROW).matches };
}

export function announce(text) {
  const region = document.getElementById("announce");
  if (!region) return;
  region.textContent = "";
  // a fresh text node after a tick, so the same sentence twice is still announced
  setTimeout(() => (region.textContent = text), 50);
}
