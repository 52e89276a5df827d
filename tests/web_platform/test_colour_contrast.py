"""Issue 12 item 10: every text and badge colour in the page's stylesheet has at least 4.5:1
contrast (WCAG AA for normal text) on the background it is drawn on, computed from app.css."""

from __future__ import annotations

from pathlib import Path

import pytest
from css_contrast import contrast, pairs

APP_CSS = Path(__file__).resolve().parents[2] / "web" / "frontend" / "src" / "app.css"
AA = 4.5


def test_the_formula_matches_wcag():
    assert contrast("#000", "#fff") == pytest.approx(21.0)
    assert contrast("#777", "#fff") == pytest.approx(4.48, abs=0.01)
    assert contrast("#fff", "#fff") == pytest.approx(1.0)


def test_the_parser_sees_every_badge_and_coloured_text():
    found = {p.selector for p in pairs(APP_CSS.read_text())}
    for selector in (".v-AC", ".v-WA", ".v-TLE", ".v-IE", ".v-pending", ".v-running",
                     ".s-done", ".diff-easy", ".diff-medium", ".diff-hard", ".btn.primary",
                     ".tag", ".note", ".topbar a", "a"):
        assert selector in found, selector


def test_pairs_below_aa_are_found():
    low = pairs(":root { --bg: #ffffff; --panel: #ffffff; color: #000; background: var(--bg); }\n"
                ".pale { color: #aab2bd; background: #f1f3f6; }\n.dim { color: #999; }")
    assert {p.selector for p in low if p.ratio < AA} == {".pale", ".dim"}


def test_every_text_colour_pair_reaches_aa():
    low = [p for p in pairs(APP_CSS.read_text()) if p.ratio < AA]
    assert not low, "\n".join(f"{p.selector}: {p.fg} on {p.bg} = {p.ratio}:1" for p in low)
