"""Text/background colour pairs of a stylesheet and their WCAG 2 contrast ratios.

Pairs: a rule setting both `color` and a background; a rule setting only `color`, on the
background of its selector's first compound when a rule gives that one a background (".topbar
a" on ".topbar"), else on the page's and the panels' backgrounds; a rule setting only a
background, with the inherited text colour. Colours are #rgb or #rrggbb, or var(--name) from
:root. Rules for disabled controls are left out (WCAG exempts inactive components).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
HEX = re.compile(r"#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})\b")


@dataclass(frozen=True)
class Pair:
    selector: str
    fg: str
    bg: str
    ratio: float


def _luminance(hex_colour: str) -> float:
    h = hex_colour.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    def channel(v: int) -> float:
        c = v / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(int(h[i:i + 2], 16)) for i in (0, 2, 4))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(fg: str, bg: str) -> float:
    a, b = sorted((_luminance(fg), _luminance(bg)), reverse=True)
    return (a + 0.05) / (b + 0.05)


def _rules(css: str):
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    css = re.sub(r"@import[^;]*;", "", css)
    css = re.sub(r"@media[^{]*\{((?:[^{}]*\{[^{}]*\})*)\s*\}", r"\1", css)
    for sel, body in RULE.findall(css):
        decls = {}
        for d in body.split(";"):
            if ":" in d:
                k, v = d.split(":", 1)
                decls[k.strip()] = v.strip()
        yield sel.strip(), decls


def pairs(css: str) -> list[Pair]:
    rules = list(_rules(css))
    root = next(d for s, d in rules if s == ":root")
    variables = {k: v for k, v in root.items() if k.startswith("--")}

    def colour(value: str | None) -> str | None:
        if not value:
            return None
        value = re.sub(r"var\((--[\w-]+)\)", lambda m: variables.get(m.group(1), ""), value)
        m = HEX.search(value)
        return m.group(0) if m else None

    page_fg = colour(root.get("color"))
    plain_bgs = [c for c in (colour(root.get("background")), colour(variables.get("--panel"))) if c]
    backgrounds: dict[str, str] = {}
    for sel, d in rules:
        bg = colour(d.get("background") or d.get("background-color"))
        for one in sel.split(","):
            if bg:
                backgrounds[one.strip()] = bg
    out = []
    for sel, d in rules:
        if sel == ":root" or ":disabled" in sel:
            continue
        fg = colour(d.get("color"))
        bg = colour(d.get("background") or d.get("background-color"))
        for one in (s.strip() for s in sel.split(",")):
            if fg and bg:
                found = [bg]
            elif fg:
                ancestor = one.split()[0] if " " in one else None
                found = [backgrounds[ancestor]] if ancestor in backgrounds else plain_bgs
            elif bg:
                fg_here, found = page_fg, [bg]
            else:
                continue
            text = fg or fg_here
            out += [Pair(one, text, b, round(contrast(text, b), 2)) for b in found]
    return out
