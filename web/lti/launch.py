"""The LTI 1.3 launch (OIDC third-party initiated login, then the platform's form post of an id
token), and deep linking. What is checked before anybody is signed in: the platform is
registered (issuer, client id, deployment); the id token is signed by one of the platform's
keys (RS256), is for this tool (audience, azp), is current (exp, iat), is an LTI 1.3 resource
link or deep linking request; the state is the one this browser was given at login initiation,
used once; the nonce is the one that state carries and was never seen before (a replayed launch
is refused). Any failure answers 400 or 401 and signs nobody in."""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from datetime import datetime, timedelta, timezone
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, RedirectResponse
from joserfc import jws, jwt
from joserfc.errors import JoseError
from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError

from web.lti import mapping
from web.lti.platforms import LtiError, find, platform_keys, tool_jwks
from web.store.accounts import LtiNonce
from web.store.db import utcnow

router = APIRouter(include_in_schema=False)

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
RESOURCE_LINK, DEEP_LINKING = "LtiResourceLinkRequest", "LtiDeepLinkingRequest"
STATE_COOKIE = "kvp_lti_state"
STATE_TTL = timedelta(minutes=10)
CLOCK_SKEW_S = 60
MAX_FIELD = 2000
MAX_ID_TOKEN = 48 * 1024


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


async def _params(request: Request) -> dict[str, str]:
    values = dict(request.query_params)
    if request.method == "POST":
        form = await request.form(max_files=0, max_fields=20)
        values.update({k: str(v) for k, v in form.items()})
    return {k: v[:MAX_ID_TOKEN if k == "id_token" else MAX_FIELD] for k, v in values.items()}


@router.api_route("/lti/login", methods=["GET", "POST"])
async def login_initiation(request: Request):
    """Step 1 (the LMS's third-party login): a state for this browser, a nonce for the token,
    and the redirect to the platform's authorization endpoint."""
    ctx, p = request.app.state.ctx, await _params(request)
    try:
        platform = find(ctx.settings, p.get("iss", ""), p.get("client_id") or None)
        if not p.get("login_hint"):
            raise LtiError(400, "no_login_hint", "the LMS sent no login_hint")
    except LtiError as exc:
        return mapping.failed(request, exc)
    state, nonce = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    with ctx.db.session() as s:
        s.execute(delete(LtiNonce).where(LtiNonce.expires_at < utcnow()))  # the old ones
        s.add(LtiNonce(value_hash=_hash(state), kind="state", issuer=platform.issuer,
                       nonce=nonce, expires_at=utcnow() + STATE_TTL))
        s.commit()
    query = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post",
             "prompt": "none", "client_id": platform.client_id,
             "redirect_uri": str(request.url_for("lti_launch")),
             "login_hint": p["login_hint"], "state": state, "nonce": nonce}
    if p.get("lti_message_hint"):
        query["lti_message_hint"] = p["lti_message_hint"]
    resp = RedirectResponse(f"{platform.auth_login_url}?{urlencode(query)}", status_code=302)
    # the platform posts the launch back cross-site: the cookie must travel with that POST
    secure = ctx.settings.cookie_secure
    resp.set_cookie(STATE_COOKIE, state, max_age=int(STATE_TTL.total_seconds()), httponly=True,
                    secure=secure, samesite="none" if secure else "lax", path="/lti/")
    return resp


def _spend_state(ctx, request: Request, state: str) -> LtiNonce:
    """The login's state, used once, and it must be this browser's."""
    if not state or request.cookies.get(STATE_COOKIE) != state:
        raise LtiError(401, "bad_state", "the launch's state is not this browser's")
    with ctx.db.session() as s:
        row = s.get(LtiNonce, _hash(state))
        if row is None or row.kind != "state" or row.expires_at < utcnow():
            raise LtiError(401, "bad_state", "the launch's state is unknown, used or expired")
        s.delete(row)
        s.commit()
        return row


def _spend_nonce(ctx, issuer: str, nonce: str, exp: int) -> None:
    """A token's nonce is accepted once: the same id token posted again is a replay."""
    until = datetime.fromtimestamp(exp, timezone.utc).replace(tzinfo=None) + STATE_TTL
    try:
        with ctx.db.session() as s:
            s.add(LtiNonce(value_hash=_hash(f"nonce:{issuer}:{nonce}"), kind="nonce",
                           issuer=issuer, expires_at=until))
            s.commit()
    except IntegrityError:
        raise LtiError(401, "replayed", "this launch was used already") from None


def verify_launch(ctx, id_token: str, state_row: LtiNonce) -> dict:
    """The id token's claims once every check of the module's docstring holds."""
    try:  # which platform it claims to be from: read before the signature, only to pick keys
        claims = json.loads(jws.extract_compact(id_token.encode()).payload)
    except (ValueError, JoseError, TypeError, AttributeError):
        raise LtiError(400, "bad_token", "the id token is not a JWT") from None
    if not isinstance(claims, dict):
        raise LtiError(400, "bad_token", "the id token is not a JWT")
    platform = find(ctx.settings, str(claims.get("iss", "")), None)
    if platform.issuer != state_row.issuer:
        raise LtiError(401, "wrong_issuer", "the token is not from the LMS the login was for")
    try:
        token = jwt.decode(id_token, platform_keys(ctx.settings, platform), algorithms=["RS256"])
    except JoseError:
        try:  # a key the platform rotated in since the keys were fetched
            token = jwt.decode(id_token, platform_keys(ctx.settings, platform, refresh=True),
                               algorithms=["RS256"])
        except JoseError:
            raise LtiError(401, "bad_signature", "the token is not signed by the LMS") from None
    _check_claims(token.claims, platform, state_row)
    _spend_nonce(ctx, platform.issuer, token.claims["nonce"], int(token.claims["exp"]))
    return token.claims


def _check_claims(c: dict, platform, state_row: LtiNonce) -> None:
    aud = c.get("aud")
    auds = aud if isinstance(aud, list) else [aud]
    now = time.time()
    checks = [
        (platform.client_id in auds, "wrong_audience", "the token is for another tool"),
        (len(auds) == 1 or c.get("azp") == platform.client_id, "wrong_azp",
         "the token's authorized party is another tool"),
        (isinstance(c.get("exp"), (int, float)) and c["exp"] > now - CLOCK_SKEW_S, "expired",
         "the token has expired"),
        (isinstance(c.get("iat"), (int, float)) and c["iat"] < now + CLOCK_SKEW_S, "bad_iat",
         "the token was issued in the future"),
        (bool(state_row.nonce) and c.get("nonce") == state_row.nonce, "bad_nonce",
         "the token's nonce is not the login's"),
        (c.get(CLAIM + "version") == "1.3.0", "bad_version", "this is not an LTI 1.3 launch"),
        (c.get(CLAIM + "message_type") in (RESOURCE_LINK, DEEP_LINKING), "bad_message",
         "this kind of LTI message is not supported"),
        (str(c.get(CLAIM + "deployment_id", "")) in platform.deployment_ids,
         "unknown_deployment", "this deployment of the tool is not registered"),
        (bool(c.get("sub")), "no_subject", "the token names no user"),
    ]
    for ok, code, message in checks:
        if not ok:
            raise LtiError(401, code, message)


@router.post("/lti/launch", name="lti_launch")
async def launch(request: Request):
    """Step 2: the platform's form post. The user is signed in and sent to the assignment
    (or, for deep linking, to the page that picks one)."""
    ctx, p = request.app.state.ctx, await _params(request)
    try:
        state_row = _spend_state(ctx, request, p.get("state", ""))
        claims = verify_launch(ctx, p.get("id_token", ""), state_row)
        resp = mapping.arrive(request, claims)
    except LtiError as exc:
        return mapping.failed(request, exc)
    resp.delete_cookie(STATE_COOKIE, path="/lti/")
    return resp


@router.get("/lti/jwks.json")
def jwks(request: Request):
    """The tool's public key: what platforms check its deep linking answers and score
    requests with."""
    return JSONResponse(tool_jwks(request.app.state.ctx.settings),
                        headers={"Cache-Control": "public, max-age=300"})


def lti_enabled(settings) -> bool:
    return bool(settings.lti_platforms)


def sweep(db) -> None:
    with db.session() as s:
        s.execute(delete(LtiNonce).where(LtiNonce.expires_at < utcnow()))
        s.commit()

