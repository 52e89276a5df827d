"""Statements: Markdown (CommonMark + tables, raw HTML off) with code highlighted by Pygments."""

from __future__ import annotations

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


_MD = MarkdownIt("commonmark", {"html": False, "highlight": _highlight, "linkify": False}) \
    .enable("table").enable("strikethrough")


@lru_cache(maxsize=64)
def render_markdown(text: str) -> str:
    return _MD.render(text)


def highlight_python(code: str) -> str:
    return highlight(code, PythonLexer(), _FORMATTER)


@lru_cache(maxsize=1)
def pygments_css() -> str:
    return HtmlFormatter(style="friendly").get_style_defs(".hl")
