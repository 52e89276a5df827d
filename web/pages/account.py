"""The account page: who you are, and your personal tokens for `judge.py submit` (make one,
shown once; revoke one). Signed-in accounts only; every form is a same-origin POST (the edge's
CSRF guard holds for a session cookie), and a token is never written into a URL or a log."""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse

from judge.messages import translate
from web.accounts import api_tokens, sessions
from web.http.lang import request_lang
from web.http.request_input import RowId
from web.pages.render import render

router = APIRouter(include_in_schema=False)
MAX_FORM_BYTES = 4096
# What the page says after a form (known codes only: the query never writes the page).
NOTICES = {"password": "Your password was changed; your other sessions were signed out.",
           "name": "Your display name was changed."}


def _account(request: Request):
    return sessions.request_account(request)


def account_view(request: Request, account, new_token: str | None = None, error: str | None = None,
          status: int = 200):
    ctx = request.app.state.ctx
    resp = render(request, "account.html", http_status=status, me=account,
                  tokens=api_tokens.listing(ctx.db, account.id), new_token=new_token,
                  error=error, server=str(request.base_url).rstrip("/"),
                  settings_notice=notice(request),
                  max_tokens=api_tokens.MAX_PER_ACCOUNT)
    resp.headers["Cache-Control"] = "no-store"  # the page may show a token once
    return resp


@router.get("/account")
def account_page(request: Request):
    account = _account(request)
    if account is None:
        return RedirectResponse("/login?next=/account", status_code=303)
    return account_view(request, account)


@router.post("/account/tokens")
async def make_token(request: Request):
    account = _account(request)
    if account is None:
        return RedirectResponse("/login?next=/account", status_code=303)
    form = await request.form(max_files=0, max_fields=4, max_part_size=MAX_FORM_BYTES)
    ctx = request.app.state.ctx
    try:
        value = await anyio.to_thread.run_sync(api_tokens.create, ctx.db, account.id,
                                               str(form.get("name") or ""))
    except api_tokens.TokenError as exc:
        return account_view(request, account, status=exc.status, error=translate(
            exc.message, request_lang(request), n=api_tokens.MAX_PER_ACCOUNT))
    return account_view(request, account, new_token=value, status=201)


@router.post("/account/tokens/{token_id}/revoke")
def revoke_token(request: Request, token_id: RowId):
    account = _account(request)
    if account is None:
        return RedirectResponse("/login?next=/account", status_code=303)
    api_tokens.revoke(request.app.state.ctx.db, account.id, token_id)
    return RedirectResponse("/account", status_code=303)


def notice(request: Request) -> str | None:
    code = request.query_params.get("notice") or ""
    return translate(NOTICES[code], request_lang(request)) if code in NOTICES else None
