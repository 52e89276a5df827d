// The build's memory snapshot of the page's Python, as the server publishes it (config.snapshot:
// its name, its two files' URLs and their SHA-256), kept in this browser's Cache Storage so that
// a reload restores it without downloading it again. A copy there is handed to Python only when
// its digest is the published one: whatever else was written there (by a script of this origin,
// by an older build) is deleted, never restored. Pages without Cache Storage (an insecure
// origin, a private window) get the server's copy each time.
const SNAP_CACHE = "kvp-python-snapshot";
const PARTS = ["memory", "files"];

async function sha256(buf) {
  const digest = await crypto.subtle.digest("SHA-256", buf);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function openCache() {
  try {
    return self.caches && crypto.subtle ? await self.caches.open(SNAP_CACHE) : null;
  } catch {
    return null;
  }
}

export class SnapshotStore {
  constructor(published) {
    this.published = published || null;
    this.urls = new Map();
    for (const part of this.published ? PARTS : []) {
      this.urls.set(new URL(this.published[part], location.href).href, part);
    }
    // Copies of what came from the server, kept once Python is ready.
    this.toKeep = new Map();
  }

  /** Whether `url` is one of the published snapshot's files. */
  has(url) {
    return this.urls.has(url);
  }

  _key(part) {
    return new URL(`/${SNAP_CACHE}/${this.published.memory_sha256.slice(0, 24)}/${part}`, location.href).href;
  }

  /** {status, body, from} for one of the files: the kept copy if it is the published one, else
   * the server's (checked the same way). */
  async answer(url) {
    const part = this.urls.get(url);
    const cache = await openCache();
    const cached = cache ? await this._fromCache(cache, part) : null;
    if (cached) return { status: 200, body: cached, from: "cache" };
    const r = await fetch(url);
    if (!r.ok) return { status: r.status };
    const body = await r.arrayBuffer();
    if (crypto.subtle && (await sha256(body)) !== this.published[`${part}_sha256`]) {
      return { status: 404 }; // not the file the page was told of (a rebuild since): none
    }
    if (cache) this.toKeep.set(part, new Blob([body]));
    return { status: 200, body, from: "network" };
  }

  async _fromCache(cache, part) {
    const hit = await cache.match(this._key(part));
    if (!hit) return null;
    const body = await hit.arrayBuffer();
    if ((await sha256(body)) === this.published[`${part}_sha256`]) return body;
    console.warn(`kvp: the kept Python snapshot's ${part} is not the published one: deleted`);
    await cache.delete(this._key(part));
    return null;
  }

  /** Keeps what came from the server, and deletes any other snapshot kept; resolves to
   * {ms, bytes}, or null when there was nothing to keep. */
  async keep() {
    if (!this.toKeep.size) return null;
    const t0 = performance.now();
    const cache = await openCache();
    const mine = new Set(PARTS.map((p) => this._key(p)));
    for (const old of await cache.keys()) {
      if (!mine.has(old.url)) await cache.delete(old);
    }
    let bytes = 0;
    const parts = [...this.toKeep];
    this.toKeep.clear();
    for (const [part, blob] of parts) {
      bytes += blob.size;
      await cache.put(this._key(part), new Response(blob));
    }
    return { ms: performance.now() - t0, bytes };
  }
}
