"""The account page's own settings (beside its personal tokens, web.pages.account): the
display name, and the password: changed with the current one, throttled as sign-in is (the form
must not be a way to guess it), every other session closed after. A password someone else reset
(a course instructor's temporary one) must be changed before any other page (web.pages.render.must_change)."""

from __future__ import annotations

from urllib.parse import parse_qs

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from judge.messages import translate
from web.accounts import service, sessions
from web.http.lang import request_lang
from web.http.throttle import client_address
from web.pages.account import account_view

router = APIRouter(include_in_schema=False)
MAX_FORM_BYTES = 4096


async def _fields(request: Request) -> dict[str, str] | None:
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        return None
    return {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}


def _signed_in():
    return RedirectResponse("/login?next=/account", status_code=303)


@router.post("/account/password")
async def change_password(request: Request):
    account = sessions.request_account(request)
    if account is None:
        return _signed_in()
    ctx, lang = request.app.state.ctx, request_lang(request)
    form = await _fields(request)
    if form is None:
        return account_view(request, account, status=413, error=translate("The form is too long.", lang))
    by_account, by_address = ctx.limits.login_by_account, ctx.limits.login_by_address
    address = client_address(request)
    wait = max(by_account.wait_s(account.username), by_address.wait_s(address))
    if wait > 0:
        resp = account_view(request, account, status=429, error=translate(
            "Too many wrong passwords: try again in {s} s.", lang, s=int(wait) + 1))
        resp.headers["Retry-After"] = str(int(wait) + 1)
        return resp
    try:
        await anyio.to_thread.run_sync(lambda: service.change_password(
            ctx.db, account, form.get("current_password", ""), form.get("new_password", ""),
            form.get("confirm_password", "")))
    except service.AccountError as exc:
        if exc.code == "wrong_password":
            by_account.failed(account.username)
            by_address.failed(address)
        return account_view(request, account, status=exc.status, error=translate(exc.message, lang))
    by_account.succeeded(account.username)
    # whoever had the old password (or the temporary one) is signed out everywhere but here
    sessions.close_all(ctx.db, account.id)
    resp = RedirectResponse("/account?notice=password", status_code=303)
    sessions.set_cookie(resp, ctx.settings, sessions.open_session(ctx.db, ctx.settings,
                                                                  account.id))
    return resp


@router.post("/account/name")
async def change_name(request: Request):
    account = sessions.request_account(request)
    if account is None:
        return _signed_in()
    form = await _fields(request)
    if form is None:
        return account_view(request, account, status=413, error=translate(
            "The form is too long.", request_lang(request)))
    ctx = request.app.state.ctx
    await anyio.to_thread.run_sync(service.rename, ctx.db, account.id,
                                   form.get("display_name", ""))
    return RedirectResponse("/account?notice=name", status_code=303)
