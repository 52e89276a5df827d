"""Statements: Markdown (CommonMark + tables, raw HTML off) with code highlighted by Pygments."""

from __future__ import annotations

import re
from functools import lru_cache

from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer, get_lexer_by_name
from pygments.util import ClassNotFound

_FORMATTER = HtmlFormatter(nowrap=True, classprefix="")


def _highlight(code: str, lang: str, _attrs) -> str:
    try:
        lexer = get_lexer_by_name(lang or "text")
    except ClassNotFound:
        return ""  # markdown-it escapes it itself
    lang_class = f' class="language-{lang}"' if lang else ""
    return f'<pre class="hl"><code{lang_class}>{highlight(code, lexer, _FORMATTER)}</code></pre>'


# Chinese and Japanese put no spaces between words, so a source line break between two such
# characters must not render as the space a browser draws for a newline ("被 重新分配").
_CJK = re.compile("[\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3100-\u312f\u31c0-\u31ef"
                  "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"
                  "\U00020000-\U0003134f]")


def _edge_char(tokens, i: int, step: int) -> str:
    """The character next to tokens[i] in direction step (-1: before it, +1: after it), looking
    through markup tokens (link and emphasis brackets) to the nearest text."""
    i += step
    while 0 <= i < len(tokens):
        t = tokens[i]
        if t.type in ("text", "code_inline") and t.content:
            return t.content[-1] if step < 0 else t.content[0]
        if t.type in ("softbreak", "hardbreak", "image"):
            return ""
        i += step
    return ""


def _join_cjk_lines(state) -> None:
    """Core rule: drop each soft line break that sits between two CJK characters. Code blocks
    are block tokens, never inline children, so they keep their line breaks."""
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        kids = block.children
        block.children = [t for i, t in enumerate(kids) if not (
            t.type == "softbreak" and _CJK.match(_edge_char(kids, i, -1) or " ")
            and _CJK.match(_edge_char(kids, i, +1) or " "))]


def _heading_ids(state) -> None:
    """Core rule: each heading gets the id a hint's `rule` links to (judge.judging.hints)."""
    from judge.judging.hints import heading_anchor

    toks = state.tokens
    for i, t in enumerate(toks):
        if t.type == "heading_open" and i + 1 < len(toks) and toks[i + 1].type == "inline":
            text = "".join(c.content for c in (toks[i + 1].children or [])
                           if c.type in ("text", "code_inline"))
            t.attrSet("id", heading_anchor(text))


def _math_end(src: str, start: int, mark: str, limit: int) -> int:
    """Where the math opened at `start` closes (its closing mark), or -1; `\\$` is a dollar."""
    end = start
    while True:
        end = src.find(mark, end)
        if end < 0 or end + len(mark) > limit:
            return -1
        if src[end - 1] != "\\":
            return end
        end += 1


def _math(state, silent: bool) -> bool:
    """Inline rule: `$...$` (inline) and `$$...$$` (display) math, as the handbook writes it,
    kept out of Markdown's hands (an `_` or `*` inside is not emphasis) and sent to the page as
    its TeX (a span the page's KaTeX renders offline, web/frontend/src/math.js). A `$` followed
    by a space or closed before a digit is money, not math ("$5 and $6")."""
    src, pos = state.src, state.pos
    if src[pos] != "$":
        return False
    mark = "$$" if src.startswith("$$", pos) else "$"
    start = pos + len(mark)
    if start >= state.posMax or (mark == "$" and src[start].isspace()):
        return False
    end = _math_end(src, start, mark, state.posMax)
    if end <= start or (mark == "$" and (src[end - 1].isspace() or
                                         src[end + 1:end + 2].isdigit())):
        return False
    if not silent:
        token = state.push("math", "span", 0)
        token.content, token.markup = src[start:end], mark
    state.pos = end + len(mark)
    return True


def _render_math(self, tokens, idx, options, env) -> str:
    from html import escape
    t = tokens[idx]
    return (f'<span class="math" data-display="{1 if t.markup == "$$" else 0}">'
            f"{escape(t.content, quote=False)}</span>")


_MD = MarkdownIt("commonmark", {"html": False, "highlight": _highlight, "linkify": False}) \
    .enable("table").enable("strikethrough")
_MD.inline.ruler.before("escape", "math", _math)
_MD.add_render_rule("math", _render_math)
_MD.core.ruler.push("join_cjk_lines", _join_cjk_lines)
_MD.core.ruler.push("heading_ids", _heading_ids)


@lru_cache(maxsize=64)
def render_markdown(text: str) -> str:
    return _MD.render(text)


def highlight_python(code: str) -> str:
    return highlight(code, PythonLexer(), _FORMATTER)


# The code's background (pygments' "friendly", darker than the statement's #f6f8fa), and WCAG
# AA's ratio for normal text: several of the style's colours (comments, numbers, module and class
# names) fall short of it, so each is darkened until it reaches it (issue 30 item 11).
CODE_BACKGROUND = "#f0f0f0"
MIN_CONTRAST = 4.5
_TEXT_COLOUR = re.compile(r"(?<![-\w])color: #([0-9A-Fa-f]{6}|[0-9A-Fa-f]{3})\b")


def _luminance(rgb: tuple[float, float, float]) -> float:
    def channel(v: float) -> float:
        c = v / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(v) for v in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour if len(hex_colour) == 6 else "".join(c * 2 for c in hex_colour)
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def readable(hex_colour: str, background: str = CODE_BACKGROUND) -> str:
    """`hex_colour` (no #), darkened in steps until its contrast on `background` is AA's."""
    bg = _luminance(_rgb(background.lstrip("#")))
    r, g, b = _rgb(hex_colour)
    rgb = (float(r), float(g), float(b))
    while (bg + 0.05) / (_luminance(rgb) + 0.05) < MIN_CONTRAST and max(rgb) > 0:
        rgb = (rgb[0] * 0.92, rgb[1] * 0.92, rgb[2] * 0.92)
    return "".join(f"{round(v):02x}" for v in rgb)


@lru_cache(maxsize=1)
def pygments_css() -> str:
    css = HtmlFormatter(style="friendly").get_style_defs(".hl")
    return _TEXT_COLOUR.sub(lambda m: f"color: #{readable(m.group(1))}", css)
