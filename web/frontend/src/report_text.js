// Pure helpers the report uses (no DOM, so node's own test runner checks them): what of pytest's
// output is worth showing, how long a timed-out test ran, and where a public test's source is.

// pytest's own progress and count lines: they count pytest's passes, which are not the judge's
// (a test whose observations differ from the reference's still "passes" in pytest).
const PROGRESS = /^(\S+\.py\s+)?[.FEsxX]+\s*(\[\s*\d+%\])?\s*$/;
const COUNTS = /\b\d+ (passed|failed|errors?|skipped|deselected|xfailed|xpassed|warnings?|rerun)\b/;
const RULE = /^[=_-]{3,}.*$/;
const NOISE = /^(short test summary info|no tests ran)/i;

/** The output minus pytest's progress dots, separators and pass/fail counts; null when nothing
 * else is left (then it adds nothing to the table and is not shown). */
export function usefulOutput(output) {
  if (!output) return null;
  const kept = [];
  for (const line of String(output).split("\n")) {
    const t = line.trim();
    if (PROGRESS.test(t) || (COUNTS.test(t) && (RULE.test(t) || / in [\d.]+s/.test(t) || /^\d+ \w+(, \d+ \w+)*$/.test(t)))) continue;
    if (RULE.test(t) && !/[A-Za-z]/.test(t.replace(/[=_-]/g, ""))) continue;
    if (NOISE.test(t.replace(/^[=_ -]+|[=_ -]+$/g, ""))) continue;
    kept.push(line);
  }
  while (kept.length && !kept[0].trim()) kept.shift();
  while (kept.length && !kept[kept.length - 1].trim()) kept.pop();
  return kept.some((l) => /\S/.test(l)) ? kept.join("\n") : null;
}

/** Seconds a timed-out test ran: its measured time, else the limit its message names. */
export function timeoutSeconds(failure, test, fallback = null) {
  if (test && Number.isFinite(test.time_s) && test.time_s > 0) return test.time_s;
  if (failure && Number.isFinite(failure.limit_s)) return failure.limit_s;
  const m = failure && failure.message && String(failure.message).match(/(\d+(?:\.\d+)?)\s*s\b/);
  if (m) return Number(m[1]);
  return fallback;
}

export function secondsText(s) {
  if (s === null || s === undefined) return "?";
  return s >= 10 ? String(Math.round(s)) : String(Math.round(s * 10) / 10);
}

/** {file, line} of a public test's source for a failure: the file:line the failure names (an
 * assertion or exception inside the test file), else the line that records the observation with
 * this label, else the test's `def`. `files` maps "public/test_x.py" to its text. */
export function sourceLocation(files, testName, failure = null) {
  if (!files || !testName) return null;
  const [path, func] = String(testName).split("::");
  const text = files[path];
  if (text === undefined || !func) return null;
  const lines = text.split("\n");
  const where = failure && failure.where && String(failure.where).match(/^(.*):(\d+)$/);
  if (where) {
    const file = where[1].startsWith("public/") ? where[1] : `public/${where[1]}`;
    if (files[file] !== undefined) return { file, line: Number(where[2]) };
  }
  const name = func.replace(/\[.*$/, "");
  const def = lines.findIndex((l) => new RegExp(`^\\s*(async\\s+)?def\\s+${name}\\s*\\(`).test(l));
  if (def < 0) return null;
  const label = failure && failure.label;
  if (label) {
    const indent = lines[def].match(/^\s*/)[0].length;
    for (let i = def + 1; i < lines.length; i++) {
      const l = lines[i];
      if (l.trim() && l.match(/^\s*/)[0].length <= indent && !l.trim().startsWith("#")) break;
      if (l.includes(JSON.stringify(label)) || l.includes(`'${label}'`)) return { file: path, line: i + 1 };
    }
  }
  return { file: path, line: def + 1 };
}

/** An exception's headline: "KeyError: 605184216668127606" (its type, then its message). */
export function headline(f) {
  if (!f) return null;
  const msg = f.message ? String(f.message).split("\n")[0] : "";
  if (!f.exc_type) return msg || null;
  return msg && !msg.startsWith(f.exc_type) ? `${f.exc_type}: ${msg}` : msg || f.exc_type;
}

// The judge's messages with values in them (judge/judging/compare.py, test_verdict.py), as the
// English text the table of words (judge/messages/zh.json) is keyed by; longest first, so the
// diff with its whole value is not read as the shorter one.
export const MESSAGE_TEMPLATES = [
  "{where}: expected {e}, got {g} (whole value: expected {ew}, got {gw})",
  "{where}: expected {e}, got {g}",
  "observation {i} ({label}) was never recorded",
  "observation {i} ({label}) was not expected",
  "observation {i}: expected {label}, got another label",
  "the test used more CPU time than its limit ({s}s)",
  "the grading used up its wall-clock time ({s}s left of its CPU time budget plus a margin) while it waited (sleeping, or blocked) rather than computed; a run that waits is not run again",
  "the process was killed by {sig} during this test",
  "the process exited (status {n}) during this test",
  "a test file ({file}) could not import from your module: {msg}",
  "the file does not define {name}",
  "the code is {size} bytes; the limit is {limit} bytes",
  "the code is not valid Unicode text (an unpaired surrogate at character {n})",
  "Completion is unavailable: {e}",
];

function templateRegex(template) {
  const names = [];
  const body = template.split(/(\{\w+\})/).map((part) => {
    const m = part.match(/^\{(\w+)\}$/);
    if (m) return names.push(m[1]), "([\\s\\S]*?)";
    return part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }).join("");
  return { re: new RegExp(`^${body}$`), names };
}
const COMPILED = MESSAGE_TEMPLATES.map((t) => ({ t, ...templateRegex(t) }));

// One step of a place inside a value, at the end of compare.py's `where`: "[2]", "['k']".
const LAST_STEP = /\[[^\]]*\]$/;

/** compare.py's `where` (the label, then the path inside the value: "label[2]['k']") with its
 * label in the reader's language; the label may end in brackets itself, so each split from the
 * longest label down is tried. */
function whereText(where, label) {
  for (let head = where; head; ) {
    const said = label(head);
    if (said !== head) return `${said}${where.slice(head.length)}`;
    const m = head.match(LAST_STEP);
    if (!m) break;
    head = head.slice(0, head.length - m[0].length);
  }
  return where;
}

/** A label as Python's repr quoted it ('x' or "x"), worded again inside the same quotes. */
function quotedLabel(text, label) {
  const m = text.match(/^(['"])([\s\S]*)\1$/);
  return m ? `${m[1]}${label(m[2])}${m[1]}` : label(text);
}

/** A judge message in the reader's language: a fixed text through the table, a text with
 * values through its template (the values stay as they are, but an observation label is the
 * problem's prose: `label` words it, i18n.js's trLabel). `tr` is i18n.js's. */
export function translateMessage(message, tr, label = (x) => x) {
  if (!message) return message;
  const text = String(message);
  const whole = tr(text);
  if (whole !== text) return whole;
  for (const { t, re, names } of COMPILED) {
    const m = text.match(re);
    if (!m) continue;
    // values stay as the code produced them; only a nested message is worded again
    // ("nothing" is compare.py's word for a part of the value that is not there)
    const vars = Object.fromEntries(names.map((n, i) => [n, n === "msg" ? translateMessage(m[i + 1], tr, label)
      : n === "where" ? whereText(m[i + 1], label) : n === "label" ? quotedLabel(m[i + 1], label)
        : m[i + 1] === "nothing" ? tr("nothing") : m[i + 1]]));
    return tr(t, vars);
  }
  return text;
}

export function failureMessage(f, tr, label = (x) => x) {
  return translateMessage(f && f.message, tr, label);
}
