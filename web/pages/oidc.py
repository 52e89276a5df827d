"""Optional single sign-on through OpenID Connect (authlib), on when the issuer, client id and
client secret are configured (web.settings). The provider's id token is verified by authlib
(signature from the provider's JWKS, issuer, audience, nonce); the account is found by
"issuer|subject", or made on first sign-in, and signed in like a password sign-in. Every
request to the provider is bounded in time and size (BoundedTransport)."""

from __future__ import annotations

import logging
import re
import secrets
from typing import TYPE_CHECKING

import anyio
import httpx
from authlib.common.errors import AuthlibBaseError
from fastapi import Request
from sqlalchemy import select
from starlette.middleware.sessions import SessionMiddleware

from judge.messages import translate
from web.accounts import service
from web.accounts.sessions import secret_key
from web.http.lang import request_lang
from web.store.accounts import Account


def _jose_error() -> type[Exception]:
    """What a bad token raises: authlib >= 1.6 verifies tokens with joserfc, older ones with its
    own jose."""
    try:
        from joserfc.errors import JoseError
        return JoseError
    except ImportError:  # pragma: no cover - older authlib
        from authlib.jose.errors import JoseError as OldJoseError
        return OldJoseError


JOSE_ERROR = _jose_error()
# the HTTP client authlib's starlette integration uses: httpx2 where installed, else httpx (whose
# API httpx2 keeps: checked as httpx)
if TYPE_CHECKING:
    import httpx as provider_http
else:
    try:
        import httpx2 as provider_http
    except ImportError:  # pragma: no cover - without httpx2 authlib falls back to httpx
        provider_http = httpx

log = logging.getLogger("web.pages.oidc")
# What a provider's failure raises: authlib's client (httpx2) and ours (httpx) are not one class.
HTTP_ERRORS = tuple({httpx.HTTPError, provider_http.HTTPError})
PROVIDER_FAILED = ("Single sign-on did not work, so nobody was signed in. Start again from the "
                   "sign-in page.")


class ProviderAnswerTooLarge(provider_http.TransportError):
    pass


class BoundedTransport(provider_http.AsyncBaseTransport):
    """Every request to the provider answered whole within `deadline_s` and `max_bytes`, or
    refused. A client's own timeouts bound each read, not the answer: a provider dripping one
    byte a second, or sending without end, would otherwise hold the sign-in (and its memory)
    for as long as it likes. Compressed answers are refused (a small one may unpack huge)."""

    def __init__(self, deadline_s: float, max_bytes: int):
        self.deadline_s, self.max_bytes = deadline_s, max_bytes

    async def handle_async_request(self, request):
        request.headers["Accept-Encoding"] = "identity"
        try:
            with anyio.fail_after(self.deadline_s):
                # A fresh connection each time: sign-ins are rare and nothing is left open.
                async with provider_http.AsyncHTTPTransport() as inner:
                    response = await inner.handle_async_request(request)
                    try:
                        body = await self._read(response)
                    finally:
                        await response.aclose()
        except TimeoutError:
            raise provider_http.ReadTimeout(
                f"the provider did not answer within {self.deadline_s} s",
                request=request) from None
        return provider_http.Response(response.status_code, headers=response.headers,
                                      content=body, request=request)

    async def _read(self, response) -> bytes:
        encoding = response.headers.get("content-encoding", "identity").lower()
        declared = response.headers.get("content-length", "0")
        if encoding != "identity" or not declared.isdigit() or int(declared) > self.max_bytes:
            raise ProviderAnswerTooLarge(f"the provider's answer ({declared} bytes, "
                                         f"{encoding}) is over {self.max_bytes} bytes or packed")
        body = bytearray()
        async for chunk in response.stream:
            body += chunk
            if len(body) > self.max_bytes:
                raise ProviderAnswerTooLarge(f"the provider's answer is over {self.max_bytes} "
                                             "bytes")
        return bytes(body)


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

    from web.pages.render import render_error_page
    from web.pages.sign_in import signed_in

    oauth = OAuth()
    bound = BoundedTransport(settings.oidc_timeout_s, settings.oidc_max_bytes)
    oauth.register("school", client_id=settings.oidc_client_id,
                   client_secret=settings.oidc_client_secret,
                   server_metadata_url=settings.oidc_issuer.rstrip("/")
                   + "/.well-known/openid-configuration",
                   client_kwargs={"scope": "openid profile", "transport": bound,
                                  "timeout": settings.oidc_timeout_s})
    # Holds only the flow's state and nonce between the redirect and the callback.
    app.add_middleware(SessionMiddleware, secret_key=secret_key(settings),
                       session_cookie="kvp_oidc", same_site="lax",
                       https_only=settings.cookie_secure, max_age=600)

    @app.get("/auth/oidc/login", include_in_schema=False)
    async def oidc_login(request: Request):
        try:  # the provider's discovery document is read here, the first time
            return await oauth.school.authorize_redirect(request,
                                                         str(request.url_for("oidc_callback")))
        except (AuthlibBaseError, *HTTP_ERRORS, ValueError, KeyError, RuntimeError) as exc:
            log.warning("OIDC provider unusable: %s: %s", type(exc).__name__, exc)
            return render_error_page(request, 502, translate(PROVIDER_FAILED,
                                                             request_lang(request)))

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
        except (AuthlibBaseError, JOSE_ERROR, *HTTP_ERRORS, ValueError, KeyError,
                RuntimeError) as exc:
            log.warning("OIDC sign-in refused: %s: %s", type(exc).__name__, exc)
            request.session.clear()
            return render_error_page(request, 400, translate(PROVIDER_FAILED,
                                                             request_lang(request)))
        request.session.clear()  # the flow's state and nonce are spent
        subject = f"{settings.oidc_issuer}|{info['sub']}"
        ctx = request.app.state.ctx
        account = await anyio.to_thread.run_sync(_account_for, ctx.db, settings, subject, info)
        return signed_in(request, account, "/courses")
