// The messages that may cross between the problem page, its sandbox frame and the Python worker
// inside it. The worker runs code the viewer did not write (a student's, loaded by staff), so
// each side checks what it receives against these tables and drops the rest: an unknown type, a
// missing field, a field of the wrong kind. A checked message is a fresh object holding only the
// declared fields, so nothing undeclared is passed on.
//
// Field kinds: "string", "number", "boolean", "bytes" (an ArrayBuffer), "strings" (an array of
// strings), "object" (a plain object or array: a Run's spec or result), "json" (anything, e.g. a
// completion answer); a trailing "?" lets it be missing or null.

// Page -> worker (through the frame).
export const TO_PYTHON = {
  init: { pyodideURL: "string", wheels: "strings", snapshot: "object?" },
  "load-editor": { editorWheels: "strings" },
  files: { module: "string", handbook: "object?", python: "string?" },
  run: { id: "number", spec: "object" },
  complete: { id: "number", code: "string", line: "number", col: "number" },
  signature: { id: "number", code: "string", line: "number", col: "number" },
  lint: { id: "number", code: "string" },
  // the page's answer to the worker's `fetch` (the worker has no network of its own)
  fetched: { id: "number", status: "number", body: "bytes?", mime: "string?", from: "string?" },
};

// Worker -> page (through the frame).
export const FROM_PYTHON = {
  status: { text: "string" },
  ready: { ms: "number", split: "object?" },
  "editor-ready": { ms: "number" },
  fatal: { message: "string" },
  result: { id: "number", result: "object?", error: "string?" },
  answer: { id: "number", value: "json", error: "string?" },
  fetch: { id: "number", url: "string" },
};

// Page -> frame: say whether you listen (the frame may have loaded before the page's script ran).
export const TO_FRAME = { hello: {} };
// Frame -> page: it listens, its worker started; or its worker could not start.
export const FROM_FRAME = { "frame-ready": {}, "frame-error": { message: "string" } };

function isPlain(v) {
  return v !== null && typeof v === "object" && !(v instanceof ArrayBuffer) && !ArrayBuffer.isView(v);
}

const KINDS = {
  string: (v) => typeof v === "string",
  number: (v) => typeof v === "number" && Number.isFinite(v),
  boolean: (v) => typeof v === "boolean",
  bytes: (v) => v instanceof ArrayBuffer,
  strings: (v) => Array.isArray(v) && v.every((s) => typeof s === "string"),
  object: isPlain,
  json: () => true,
};

/** `data` as a message of `table` (a fresh object of its declared fields), or null. */
export function checked(table, data) {
  if (!isPlain(data) || typeof data.type !== "string" || !Object.prototype.hasOwnProperty.call(table, data.type)) return null;
  const out = { type: data.type };
  for (const [name, kind] of Object.entries(table[data.type])) {
    const optional = kind.endsWith("?");
    const v = data[name];
    if (optional && (v === undefined || v === null)) continue;
    if (!KINDS[optional ? kind.slice(0, -1) : kind](v)) return null;
    out[name] = v;
  }
  return out;
}

/** The buffers a message carries, to transfer rather than copy. */
export function transfers(msg) {
  return msg && msg.body instanceof ArrayBuffer ? [msg.body] : [];
}
