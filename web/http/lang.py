"""The language of the page a request comes from: ?lang=, else the language cookie the pages
set, else the browser's Accept-Language. API refusals are worded in it, like the page."""

from __future__ import annotations

from judge.messages import LANGS

LANG_COOKIE = "kvp_lang"


def request_lang(request) -> str:
    q = request.query_params.get("lang")
    if q in LANGS:
        return q
    c = request.cookies.get(LANG_COOKIE)
    if c in LANGS:
        return c
    return "zh" if request.headers.get("accept-language", "").lower().startswith("zh") else "en"
