"""Optional single sign-on through OpenID Connect (authlib), on when the issuer, client id and
client secret are configured (web.settings). The provider's id token is verified by authlib
(signature from the provider's JWKS, issuer, audience, nonce); the account is found by
"issuer|subject", or made on first sign-in, and signed in like a password sign-in."""

from __future__ import annotations

import re
import secrets

import anyio
from fastapi import Request
from sqlalchemy import select
from starlette.middleware.sessions import SessionMiddleware

from web.accounts import service
from web.accounts.sessions import secret_key
from web.store.accounts import Account


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
        token = await oauth.school.authorize_access_token(request)
        info = token.get("userinfo") or {}
        subject = f"{settings.oidc_issuer}|{info['sub']}"
        ctx = request.app.state.ctx
        account = await anyio.to_thread.run_sync(_account_for, ctx.db, settings, subject, info)
        return signed_in(request, account, "/courses")
