"""How every HTML page is drawn: the one Jinja2 environment (templates in web/templates, their
words looked up in judge/messages by `_`), its filters (times in the reader's zone, shares as
percentages), and `render`, which adds what every page shows (the reader's language, zone,
visitor and account, the Instructor link) and sends an account whose password someone else set
to the page that changes it first."""

from __future__ import annotations

from functools import partial

from fastapi import Request
from fastapi.responses import RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from jinja2 import pass_context

from judge.grading.environment import grading_python
from judge.messages import LANGS, translate
from web import dates
from web.accounts import sessions
from web.accounts.service import staff_roles
from web.http.identity import find_visitor, request_token
from web.http.lang import LANG_COOKIE, request_lang
from web.pages import problem_list as listing_model
from web.settings import TEMPLATES_DIR

# Pages an account that must change its password may still open.
FREE_TEMPLATES = ("account.html", "error.html")


def must_change(account) -> bool:
    return bool(account is not None and account.must_change_password)

templates = Jinja2Templates(directory=str(TEMPLATES_DIR))


@pass_context
def _when(context, value) -> str:
    """A time as every page writes it, in the reader's zone (web.dates)."""
    return dates.when(value, context.get("lang", "en"), context.get("reader_zone"))


@pass_context
def _local_time(context, value) -> str:
    """A time as a form's field holds it (the label names the zone)."""
    return dates.local_text(value, context.get("lang", "en"), context.get("reader_zone"))


def percent(fraction: float | None) -> str:
    """0.8 -> "80", 0.125 -> "12.5": a share written as a percentage, its unit beside it."""
    return "" if fraction is None else f"{round(fraction * 100, 1):g}"


@pass_context
def _time_example_lang(context, value) -> str:
    """A form's example time in the form's own words (UTC: it only shows the shape)."""
    return dates.local_text(value, context.get("lang", "en"))


def percent_number(value: float | None) -> str:
    """A number already in percent (80.0 -> "80", 12.5 -> "12.5")."""
    return "" if value is None else f"{value:g}"


def epoch_iso(seconds) -> str:
    """A Unix time (a check's start) as ISO 8601 UTC, for <time> and `when`."""
    from datetime import datetime, timezone
    try:
        return datetime.fromtimestamp(float(seconds), timezone.utc).isoformat(timespec="seconds")
    except (TypeError, ValueError, OverflowError, OSError):
        return ""


@pass_context
def _chapter_name(context, chapter: str) -> str:
    """A chapter in the reader's language where the table has it, else as its words."""
    words = listing_model.chapter_words(chapter or "")
    return translate(words, context.get("lang", "en"))


templates.env.filters.update(when=_when, local_time=_local_time, percent=percent,
                             chapter_name=_chapter_name, tag_key=listing_model.tag_key,
                             percent_number=percent_number, epoch_iso=epoch_iso,
                             time_example=_time_example_lang)

def pick_lang(request: Request) -> str:
    return request_lang(request)


def render(request: Request, name: str, http_status: int = 200, **ctx) -> Response:
    lang = pick_lang(request)
    app_ctx = request.app.state.ctx
    zone = reader_zone(request)
    visitor = find_visitor(app_ctx.db, quiet_token(request))
    session = sessions.request_session(request)
    if session and must_change(session.account) and name not in FREE_TEMPLATES:
        # a temporary password someone else set: no page but the one that changes it
        return RedirectResponse("/account#password", status_code=303)
    # The "Instructor" link: for platform staff and a course's instructors and assistants only.
    show_instructor = bool(session and (session.is_staff or
                                        staff_roles(app_ctx.db, session.account) - {"student"}))
    # The templates' words are English, looked up in the one table (judge/messages) by `_`; the
    # grading Python is named where it is decided (judge.grading.environment), not in the text.
    resp = templates.TemplateResponse(request, name, {
        "lang": lang, "_": partial(translate, lang=lang), "grading_python": grading_python(),
        "visitor": visitor, "build": app_ctx.build, "account": session.account if session else None,
        "show_instructor": show_instructor, "reader_zone": zone,
        "zone_label": dates.zone_label(zone), "oidc_enabled": app_ctx.settings.oidc_enabled,
        "instructor_enabled": bool(app_ctx.settings.instructor_token), **ctx},
        status_code=http_status)
    if request.query_params.get("lang") in LANGS:
        resp.set_cookie(LANG_COOKIE, lang, max_age=31536000, samesite="lax")
    return resp


def reader_zone(request: Request):
    """The reader's zone, as their browser last told it (pages.js), else None (UTC)."""
    return dates.zone(request.cookies.get(dates.READER_ZONE_COOKIE))


def render_error_page(request: Request, status: int, message: str) -> Response:
    return render(request, "error.html", http_status=status, status_code=status, message=message)


def quiet_token(request: Request):
    try:
        return request_token(request)
    except Exception:
        return None
