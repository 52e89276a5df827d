"""Issue 12 item 8: a Markdown line break inside Chinese text renders without a space."""

from __future__ import annotations

import re

import pytest
from paths import REPO

from web.pages.markdown import render_markdown

CJK_NEWLINE_CJK = re.compile(r"[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]\n[\u4e00-\u9fff\u3000-\u303f\uff00-\uffef]")


def _outside_code(html: str) -> str:
    return re.sub(r"<pre.*?</pre>", "", html, flags=re.S)


def test_a_line_break_between_chinese_characters_is_dropped():
    html = render_markdown("块会被\n重新分配。\n")
    assert "块会被重新分配。" in html


def test_breaks_next_to_latin_text_or_inline_code_stay():
    html = render_markdown("调用\nlookup 之后\n`free`\n释放")
    assert "调用\nlookup" in html
    assert "<code>free</code>\n释放" in html


def test_markup_between_the_characters_does_not_hide_them():
    html = render_markdown("**被**\n重新分配，[链接](https://example.org)\n之后")
    assert "<strong>被</strong>重新分配" in html
    assert "</a>之后" in html


def test_code_blocks_keep_their_line_breaks():
    html = render_markdown("```python\n# 中\n# 文\n```\n\n    缩\n    进\n")
    assert "# 中</span>\n" in html and "缩\n进" in html


def test_english_lines_still_join_with_a_space():
    assert "one\ntwo" in render_markdown("one\ntwo")


STATEMENTS = sorted(REPO.glob("problems/*/statement.zh.md"))


@pytest.mark.parametrize("path", STATEMENTS, ids=[p.parent.name for p in STATEMENTS])
def test_chinese_statements_render_without_stray_spaces(path):
    text = path.read_text(encoding="utf-8")
    html = _outside_code(render_markdown(text))
    assert not CJK_NEWLINE_CJK.search(html), CJK_NEWLINE_CJK.search(html).group(0)
