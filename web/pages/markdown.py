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


_MD = MarkdownIt("commonmark", {"html": False, "highlight": _highlight, "linkify": False}) \
    .enable("table").enable("strikethrough")
_MD.core.ruler.push("join_cjk_lines", _join_cjk_lines)
_MD.core.ruler.push("heading_ids", _heading_ids)


@lru_cache(maxsize=64)
def render_markdown(text: str) -> str:
    return _MD.render(text)


def highlight_python(code: str) -> str:
    return highlight(code, PythonLexer(), _FORMATTER)


@lru_cache(maxsize=1)
def pygments_css() -> str:
    return HtmlFormatter(style="friendly").get_style_defs(".hl")
