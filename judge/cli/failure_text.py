"""What a terminal says about a first failure beyond the table, as the page does: the
exception's headline ("KeyError: 605184216668127605", web/frontend/src/report_text.js's
`headline`), where in the student's own file it was raised, and the hints the failure meets
(hints.js offers them one level at a time, the vaguest first; `judge.py hint` does the same)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from judge.judging.hints import heading_anchor
from judge.messages import translate

_FRAME = re.compile(r'File "([^"]+)", line (\d+)(?:, in (.+))?')


@dataclass
class FailureContext:
    """What the report itself does not know: the student's file as they named it (the report
    says `tiered.py`, the module it was graded as), the statement (for the hints' rule
    headings) and the command that gives the next hint."""
    your_file: str | None = None
    module_file: str | None = None
    statement: str = ""
    hint_command: str | None = None


def headline(ff: dict) -> str | None:
    """The exception's type, then the first line of its message."""
    msg = str(ff.get("message") or "").split("\n")[0]
    exc = ff.get("exc_type")
    if not exc:
        return msg or None
    return f"{exc}: {msg}" if msg and not msg.startswith(exc) else (msg or exc)


def raised_at(ff: dict, ctx: FailureContext, lang: str) -> str | None:
    """"in your file F, line N, in FUNC": the innermost frame of the student's file."""
    line = ff.get("line")
    if not line or not ff.get("exc_type"):
        return None
    func = None
    for m in _FRAME.finditer(str(ff.get("traceback") or "")):
        if ctx.module_file is None or m.group(1).endswith(ctx.module_file):
            func = m.group(3)
    name = ctx.your_file or ctx.module_file or "?"
    if func:
        return translate("in your file {file}, line {line}, in {func}", lang, file=name,
                         line=line, func=func)
    return translate("in your file {file}, line {line}", lang, file=name, line=line)


def traceback_text(ff: dict, ctx: FailureContext) -> str | None:
    """The traceback with the module's name replaced by the student's path (so an editor can
    jump to it) and without its last line when that only repeats the headline."""
    text = str(ff.get("traceback") or "")
    if not text:
        return None
    lines = text.split("\n")
    if headline(ff) and lines[-1].strip() == headline(ff):
        lines = lines[:-1]
    if ctx.your_file and ctx.module_file:
        lines = [line.replace(f'File "{ctx.module_file}"', f'File "{ctx.your_file}"')
                 for line in lines]
    return "\n".join(lines) or None


def hint_steps(hints: list[dict], lang: str) -> list[tuple[dict, int, str]]:
    """(hint, level index, text) in the order the page offers them."""
    out = []
    for h in hints or []:
        levels = (h.get("levels") or {}).get(lang) or (h.get("levels") or {}).get("en") or []
        out += [(h, i, str(text)) for i, text in enumerate(levels)]
    return out


def rule_heading(hint: dict, statement: str, lang: str) -> str | None:
    """The statement heading a hint's rule names (its anchor, web/pages/markdown.py)."""
    rule = hint.get("rule") or {}
    anchor = rule.get(lang) or rule.get("en")
    if not anchor:
        return None
    for line in statement.splitlines():
        m = re.match(r"^#{2,6}\s+(.*?)\s*#*\s*$", line)
        if m and heading_anchor(m.group(1).replace("`", "")) == anchor:
            return m.group(1)
    return None


def hint_lines(hints: list[dict], shown: int, ctx: FailureContext, lang: str) -> list[str]:
    """The first `shown` hint levels, each with the statement rule it is about, and how to get
    the next one."""
    steps = hint_steps(hints, lang)
    out = []
    for n, (h, i, text) in enumerate(steps[:shown], 1):
        heading = rule_heading(h, ctx.statement, lang)
        about = translate(" (the statement's rule: {heading})", lang,
                          heading=heading) if heading else ""
        out.append(translate("Hint {n}: {hint}", lang, n=n, hint=text) + about)
    if shown < len(steps) and ctx.hint_command:
        out.append(translate("A more specific hint: {command}", lang, command=ctx.hint_command))
    return out
