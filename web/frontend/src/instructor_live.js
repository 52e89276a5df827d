// The instructor page refreshes what is running: it long-polls /api/instructor/changes with the
// stamp the page was rendered with and, when the server says something changed, fetches the
// page again and swaps in its [data-live] sections (forms outside them, such as the filter
// being typed, are left alone).
const RETRY_MS = 5000;

export async function followChanges(marker, afterSwap) {
  let stamp = marker.dataset.liveStamp;
  for (;;) {
    try {
      const r = await fetch(`/api/instructor/changes?since=${encodeURIComponent(stamp)}`,
                            { credentials: "same-origin", cache: "no-store" });
      if (!r.ok) throw new Error(String(r.status));
      const answer = await r.json();
      if (answer.changed) {
        const page = await fetch(location.href, { credentials: "same-origin", cache: "no-store" });
        const doc = new DOMParser().parseFromString(await page.text(), "text/html");
        for (const old of document.querySelectorAll("[data-live][id]")) {
          const fresh = doc.getElementById(old.id);
          if (fresh) old.replaceWith(document.importNode(fresh, true));
        }
        afterSwap(document);
        const next = doc.getElementById("instructor-live");
        stamp = next ? next.dataset.liveStamp : answer.stamp;
        marker.dataset.liveStamp = stamp;
      }
    } catch (err) {
      await new Promise((done) => setTimeout(done, RETRY_MS));
    }
  }
}
