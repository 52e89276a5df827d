"""Hints keyed to a report's first failure (a problem's hints.toml, judge.problem.config).

Browser-safe (the page's Python imports it for Run, the grader for Submit): plain dicts in,
plain dicts out. A hint is offered when the first failure is in one of its `tests` or at one of
its observation `labels` (and, where it names a `kind`, the failure is of that kind: "exception"
for a test that raised); hints keyed to the label come first, since a label says more about
the bug than the test it is in. `heading_anchor` is the id a statement heading gets on the page
(web/pages/markdown.py), so a hint's `rule` links to the paragraph it is about.
"""

from __future__ import annotations

import re
import unicodedata

_NOT_WORD = re.compile(r"[^\w]+", re.UNICODE)


def heading_anchor(text: str) -> str:
    """"`lookup(token_ids)`: find, then reload" -> "lookup-token_ids-find-then-reload"; letters
    of any script (CJK too) stay as they are, every run of anything else becomes one "-"."""
    text = unicodedata.normalize("NFKC", text).strip().lower()
    return _NOT_WORD.sub("-", text).strip("-") or "section"


def statement_anchors(markdown: str) -> list[str]:
    """The anchors of a statement's headings (## and deeper; the # title is not shown)."""
    out = []
    for line in markdown.splitlines():
        m = re.match(r"^(#{2,6})\s+(.*?)\s*#*\s*$", line)
        if m:
            out.append(heading_anchor(m.group(2).replace("`", "")))
    return out


# A hidden test's failure carries its name and nothing else (report.py): a hint for it can only
# be keyed to the test.
def _shown(hint: dict, how: str) -> dict:
    return {"id": hint["id"], "matched": how, "rule": dict(hint.get("rule") or {}),
            "levels": {"en": list(hint.get("en") or []), "zh": list(hint.get("zh") or [])}}


def matching_hints(hints: list[dict] | None, first_failure: dict | None) -> list[dict]:
    """The hints for this first failure, most specific first: [{id, matched ("label" or
    "test"), rule: {en, zh}, levels: {en: [...], zh: [...]}}]."""
    if not hints or not first_failure:
        return []
    test, label = first_failure.get("test"), first_failure.get("label")
    hints = [h for h in hints if h.get("kind") in (None, first_failure.get("kind"))]
    by_label = [_shown(h, "label") for h in hints if label is not None and label in (h.get("labels") or [])]
    seen = {h["id"] for h in by_label}
    by_test = [_shown(h, "test") for h in hints
               if h["id"] not in seen and test is not None and test in (h.get("tests") or [])]
    return by_label + by_test
