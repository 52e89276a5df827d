"""A problem's observation labels in the reader's language (its folder's labels.<lang>.json).

A label is the text a test passes to `observe(label, value)`; it is the problem's own prose, so
its translation lives with the problem, not in judge/messages/zh.json. The table maps English to
the translation; a key with `{name}` placeholders stands for every label an f-string makes
("access({n}) returns" -> its translation with the same {n}): each placeholder matches any text, and what it
matched is put in the translation as it is, or as the table's own text for it when there is
one (a case name such as "two users", or "seed {n} ({policy})", may have its translation too). Exact keys win over
patterns; of the patterns, the one with the most fixed text wins, so the most specific applies.

Browser-safe and plain (dicts and strings); web/frontend/src/i18n.js does the same lookup.
"""

from __future__ import annotations

import re

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
# An f-string's replacement fields as the labels' shape: "step {i + 1}: x" -> "step {}: x"
_FIELD = re.compile(r"\{[^{}]*\}")


def shape(text: str) -> str:
    """A pattern or f-string label with every placeholder written `{}` (what must match)."""
    return _FIELD.sub("{}", text)


class LabelTable:
    """English label -> translation, with the pattern keys compiled once."""

    def __init__(self, table: dict[str, str] | None = None):
        self.table = dict(table or {})
        self.exact = {k: v for k, v in self.table.items() if not _PLACEHOLDER.search(k)}
        patterns = []
        for key, text in self.table.items():
            names = _PLACEHOLDER.findall(key)
            if not names:
                continue
            parts = _PLACEHOLDER.split(key)  # fixed, name, fixed, name, ..., fixed
            body = "".join(re.escape(p) if i % 2 == 0 else "(.+?)" for i, p in enumerate(parts))
            fixed = sum(len(p) for p in parts[::2])
            patterns.append((fixed, re.compile(f"^{body}$", re.DOTALL), names, text))
        self.patterns = [p[1:] for p in sorted(patterns, key=lambda p: -p[0])]
        self.shapes = {shape(k) for k in self.table}

    def __bool__(self) -> bool:
        return bool(self.table)

    def lookup(self, label: str) -> str | None:
        """The translation of `label`, or None where the table has none."""
        if label in self.exact:
            return self.exact[label]
        for regex, names, text in self.patterns:
            m = regex.match(label)
            if m:
                out = text
                for name, value in zip(names, m.groups()):
                    # a part is shorter than the label (a pattern has fixed text), so this ends
                    said = self.lookup(value) if value != label else None
                    out = out.replace("{" + name + "}", value if said is None else said)
                return out
        return None

    def text(self, label: str) -> str:
        """`label` in the table's language, else as it is."""
        found = self.lookup(label)
        return label if found is None else found

    def covers_shape(self, fstring_shape: str) -> bool:
        """Whether a label an f-string makes (its `shape`) has a pattern of the same shape."""
        return fstring_shape in self.shapes
