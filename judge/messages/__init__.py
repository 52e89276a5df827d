"""The words users read, one table per language, as data: `zh.json` maps each English text to
its Chinese; English needs no table (the key is the text). The command lines (console.py,
trace_text.py, practice/judge.py), the pages (a Jinja `_`, web/pages/routes.py) and the browser
(web/frontend/src/i18n.js bundles zh.json) all look up here, so a text is translated once.

Placeholders are `{name}`, filled by `translate(..., name=value)` here and `tr(text, {name})` in
the browser.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from judge.judging.verdict import NAMES

LANGS = ("en", "zh")


@cache
def table(lang: str) -> dict[str, str]:
    """English text -> the text in `lang` (empty for English and unknown languages)."""
    if lang == "en" or lang not in LANGS:
        return {}
    return json.loads(Path(__file__).with_name(f"{lang}.json").read_text(encoding="utf-8"))


def translate(text: str, lang: str = "en", **values) -> str:
    """`text` in `lang` (the English itself where the table has no entry), placeholders filled."""
    out = table(lang).get(text, text)
    return out.format(**values) if values else out


def verdict_name(verdict, lang: str = "en") -> str:
    """A verdict's name ("WA" -> "wrong answer") in `lang`."""
    return translate(NAMES[str(verdict)], lang)
