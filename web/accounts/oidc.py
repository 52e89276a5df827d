"""Optional single sign-on through OpenID Connect (authlib), on when the issuer, client id and
client secret are configured (web.settings). The provider's id token is verified by authlib
(signature from the provider's JWKS, issuer, audience, nonce); the account is found by
"issuer|subject", or made on first sign-in, and signed in like a password sign-in."""

from __future__ import annotations

import logging
import re
import secrets

import anyio
import httpx
from authlib.common.errors import AuthlibBaseError
from fastapi import Request
from sqlalchemy import select
from starlette.middleware.sessions import SessionMiddleware

from judge.messages import translate
from web.accounts import service
from web.accounts.sessions import secret_key
from web.api.lang import request_lang
from web.store.accounts import Account

try:  # authlib >= 1.6 verifies tokens with joserfc, older ones with its own jose
    from joserfc.errors import JoseError
except ImportError:  # pragma: no cover - older authlib
    from authlib.jose.errors import JoseError

log = logging.getLogger("web.accounts.oidc")


def _account_for(db, settings, subject: str, info: dict) -> Account:
    with db.session() as s:
        found = s.scalar(select(Account).where(Account.oidc_subject == subject))
    if found is not None:
        return found
    wanted = re.sub(r"[^a-z0-9._-]", "", str(info.get("preferred_username") or "").lower())[:48]
    username = wanted if service.USERNAME_RE.match(wanted or "") else ""
    with db.session() as s:
        if not username or s.scalar(select(Account.id).where(Account.username == username)):
            username = f"sso-{secrets.token_hex(4)}"
    return service.create_account(db, settings, username, None,
                                  str(info.get("name") or username), oidc_subject=subject)


def install(app, settings) -> None:
    from authlib.integrations.starlette_client import OAuth

    from web.accounts.routes import signed_in
    from web.pages.routes import render_error_page

    oauth = OAuth()
    oauth.register("school", client_id=settings.oidc_client_id,
                   client_secret=settings.oidc_client_secret,
                   server_metadata_url=settings.oidc_issuer.rstrip("/")
                   + "/.well-known/openid-configuration",
                   client_kwargs={"scope": "openid profile"})
    # Holds only the flow's state and nonce between the redirect and the callback.
    app.add_middleware(SessionMiddleware, secret_key=secret_key(settings),
                       session_cookie="kvp_oidc", same_site="lax",
                       https_only=settings.cookie_secure, max_age=600)

    @app.get("/auth/oidc/login", include_in_schema=False)
    async def oidc_login(request: Request):
        return await oauth.school.authorize_redirect(request,
                                                     str(request.url_for("oidc_callback")))

    @app.get("/auth/oidc/callback", name="oidc_callback", include_in_schema=False)
    async def oidc_callback(request: Request):
        try:
            # authlib checks the state against this browser's flow, redeems the code, and
            # verifies the id token: signature by the provider's JWKS, issuer, audience, expiry
            # and the nonce it sent. Anything short of that signs nobody in.
            token = await oauth.school.authorize_access_token(request)
            info = token.get("userinfo") or {}
            if not info.get("sub"):
                raise ValueError("the provider sent no id token with a subject")
        except (AuthlibBaseError, JoseError, httpx.HTTPError, ValueError, KeyError) as exc:
            log.warning("OIDC sign-in refused: %s: %s", type(exc).__name__, exc)
            request.session.clear()
            return render_error_page(request, 400, translate(
                "Single sign-on did not work, so nobody was signed in. Start again from the "
                "sign-in page.", request_lang(request)))
        request.session.clear()  # the flow's state and nonce are spent
        subject = f"{settings.oidc_issuer}|{info['sub']}"
        ctx = request.app.state.ctx
        account = await anyio.to_thread.run_sync(_account_for, ctx.db, settings, subject, info)
        return signed_in(request, account, "/courses")
