"""Sign-up, sign-in and sign-out forms. Every form is a same-origin POST (web.http.edge refuses
one from another origin); wrong passwords are throttled per account and per address."""

from __future__ import annotations

from urllib.parse import parse_qs

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from web.accounts import service, sessions
from web.http.identity import browser_token, instructor_token_matches
from web.http.throttle import client_address
from web.pages.render import render

router = APIRouter(include_in_schema=False)


async def _form(request: Request) -> dict[str, str]:
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    return {k: v[0] for k, v in form.items()}


def _safe_next(value: str | None) -> str:
    """Only a path of this server (never //host or a scheme): no open redirect."""
    if value and value.startswith("/") and not value.startswith("//") and "\\" not in value:
        return value
    return "/courses"


def signed_in(request: Request, account, next_url: str) -> RedirectResponse:
    """Close the browser's old session (no fixation), open a new one, adopt its anonymous
    history; the redirect carrying the new cookie."""
    ctx = request.app.state.ctx
    name = sessions.cookie_name(ctx.settings)
    sessions.close(ctx.db, ctx.settings, request.cookies.get(name))
    service.adopt_history(ctx.db, account, browser_token(request))
    # (no roster look-up here: a roster reaches an account once, as an invitation, when the
    # account is made; an existing one is invited by the roster's upload)
    resp = RedirectResponse(_safe_next(next_url), status_code=303)
    sessions.set_cookie(resp, ctx.settings, sessions.open_session(ctx.db, ctx.settings,
                                                                  account.id))
    return resp


@router.get("/signup")
def signup_page(request: Request):
    return render(request, "signup.html", error=None, form={},
                  next=request.query_params.get("next", ""))


@router.post("/signup")
async def signup(request: Request):
    ctx = request.app.state.ctx
    form = await _form(request)
    token = form.get("instructor_token", "")
    # The instructor token makes the first instructors (and stays for scripts).
    staff = bool(token) and instructor_token_matches(request, token)
    if token and not staff:
        return render(request, "signup.html", http_status=403,
                      error="The instructor token is wrong.", form=form, next=form.get("next"))
    try:
        account = await anyio.to_thread.run_sync(
            lambda: service.create_account(ctx.db, ctx.settings, form.get("username", ""),
                                           form.get("password", ""),
                                           form.get("display_name", ""), is_staff=staff))
    except service.AccountError as exc:
        return render(request, "signup.html", http_status=exc.status, error=exc.message,
                      form={k: v for k, v in form.items() if "password" not in k and
                            k != "instructor_token"}, next=form.get("next"))
    return signed_in(request, account, form.get("next", ""))


@router.get("/login")
def login_page(request: Request):
    return render(request, "login.html", error=None, username="",
                  next=request.query_params.get("next", ""))


@router.post("/login")
async def login(request: Request):
    ctx = request.app.state.ctx
    form = await _form(request)
    username = service.normal_username(form.get("username", ""))[:64]
    by_account, by_address = ctx.limits.login_by_account, ctx.limits.login_by_address
    address = client_address(request)
    wait = max(by_account.wait_s(username), by_address.wait_s(address))
    if wait > 0:
        retry = int(wait) + 1
        resp = render(request, "login.html", http_status=429, username=username,
                      next=form.get("next"), error="Too many wrong passwords: try again in "
                      "{s} s.", error_values={"s": retry})
        resp.headers["Retry-After"] = str(retry)
        return resp
    account = await anyio.to_thread.run_sync(
        lambda: service.authenticate(ctx.db, username, form.get("password", "")))
    if account is None:
        by_account.failed(username)
        by_address.failed(address)
        return render(request, "login.html", http_status=401, username=username,
                      next=form.get("next"), error="The username or the password is wrong.")
    by_account.succeeded(username)
    return signed_in(request, account, form.get("next", ""))


@router.post("/logout")
async def logout(request: Request):
    ctx = request.app.state.ctx
    sessions.close(ctx.db, ctx.settings,
                   request.cookies.get(sessions.cookie_name(ctx.settings)))
    resp = RedirectResponse("/", status_code=303)
    sessions.clear_cookie(resp, ctx.settings)
    return resp
