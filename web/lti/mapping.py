"""What a verified LTI launch does here: the LMS user's account (found by issuer and subject,
made on the first launch), the LMS course's course (made by its instructor's first launch; a
student's launch joins it, the LMS vouching for the enrolment), the resource link's assignment
(chosen by an instructor's deep linking, carried in the link's custom `assignment`), then a
signed-in session on the assignment's page. Deep linking answers the LMS with a JWT signed by
the tool's key, posted back by the instructor's browser."""

from __future__ import annotations

import hashlib
import secrets
import time
from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from joserfc import jwt
from joserfc.errors import JoseError
from sqlalchemy import select

from judge.messages import translate
from web.accounts import service as accounts
from web.accounts import sessions
from web.courses import service as courses
from web.http.lang import request_lang
from web.lti.platforms import LtiError, find, tool_key
from web.pages.render import render, render_error_page
from web.pages.sign_in import signed_in
from web.store.accounts import (
    ASSISTANT,
    INSTRUCTOR,
    STUDENT,
    Account,
    Assignment,
    LtiContext,
    LtiResource,
    Membership,
)

router = APIRouter(include_in_schema=False)

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
DL_TTL_S = 900


def failed(request: Request, exc: LtiError):
    return render_error_page(request, exc.status, translate(
        "The LMS launch was refused ({why}), so nobody was signed in.", request_lang(request),
        why=exc.message))


def role_of(claims: dict) -> str:
    roles = {r for r in claims.get(CLAIM + "roles") or [] if isinstance(r, str)}
    if roles & {MEMBERSHIP + "Instructor", MEMBERSHIP + "Administrator",
                MEMBERSHIP + "ContentDeveloper"}:
        return INSTRUCTOR
    ta = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
    return ASSISTANT if ta in roles else STUDENT


def account_for(ctx, claims: dict) -> Account:
    subject = f"{claims['iss']}|{claims['sub']}"[:400]
    with ctx.db.session() as s:
        found = s.scalar(select(Account).where(Account.oidc_subject == subject))
    if found is not None:
        return found
    name = " ".join(str(claims.get(k) or "") for k in ("given_name", "family_name")).strip()
    name = str(claims.get("name") or name or "LMS user")
    username = "lti-" + hashlib.sha256(subject.encode()).hexdigest()[:12]
    return accounts.create_account(ctx.db, ctx.settings, username, None, name,
                                   oidc_subject=subject)


def course_for(ctx, claims: dict, account: Account, role: str) -> int:
    """Our course for the LMS course; made by its instructor's first launch."""
    context = claims.get(CLAIM + "context") or {}
    key = (claims["iss"], str(claims[CLAIM + "deployment_id"]), str(context.get("id") or ""))
    if not key[2]:
        raise LtiError(400, "no_context", "the launch names no LMS course")
    with ctx.db.session() as s:
        row = s.scalar(select(LtiContext).where(LtiContext.issuer == key[0],
                                                LtiContext.deployment_id == key[1],
                                                LtiContext.context_id == key[2]))
        cid = row.course_id if row is not None else None
    if cid is None:
        if role != INSTRUCTOR:
            raise LtiError(409, "course_not_set_up", "this LMS course is not set up here yet: "
                           "its instructor opens it from the LMS first")
        title = str(context.get("title") or context.get("label") or "LMS course")
        cid = courses.create_course(ctx.db, account, title).id
        with ctx.db.session() as s:
            s.add(LtiContext(issuer=key[0], deployment_id=key[1], context_id=key[2],
                             course_id=cid))
            s.commit()
    _member(ctx, cid, account, role)
    return cid


def _member(ctx, cid: int, account: Account, role: str) -> None:
    with ctx.db.session() as s:
        m = s.scalar(select(Membership).where(Membership.course_id == cid,
                                              Membership.account_id == account.id))
        if m is None:
            s.add(Membership(course_id=cid, account_id=account.id, role=role))
            s.commit()


def assignment_for(ctx, claims: dict, cid: int) -> int | None:
    """The resource link's assignment: its mapping, else the deep link's custom `assignment`
    (of this course only); the line item for its scores kept up to date."""
    link = claims.get(CLAIM + "resource_link") or {}
    key = (claims["iss"], str(claims[CLAIM + "deployment_id"]), str(link.get("id") or ""))
    lineitem = (claims.get(AGS) or {}).get("lineitem")
    lineitem = lineitem if isinstance(lineitem, str) and lineitem.startswith("http") else None
    with ctx.db.session() as s:
        row = s.scalar(select(LtiResource).where(LtiResource.issuer == key[0],
                                                 LtiResource.deployment_id == key[1],
                                                 LtiResource.resource_link_id == key[2]))
        if row is None:
            wanted = str((claims.get(CLAIM + "custom") or {}).get("assignment") or "")
            a = s.get(Assignment, int(wanted)) if wanted.isdigit() and len(wanted) < 12 else None
            if a is None or a.course_id != cid or not key[2]:
                return None
            row = LtiResource(issuer=key[0], deployment_id=key[1], resource_link_id=key[2],
                              assignment_id=a.id)
            s.add(row)
        if lineitem:
            row.lineitem_url = lineitem[:1000]
        s.commit()
        return row.assignment_id


def arrive(request: Request, claims: dict):
    """The verified launch's redirect, with the session cookie of its user."""
    ctx = request.app.state.ctx
    account, role = account_for(ctx, claims), role_of(claims)
    cid = course_for(ctx, claims, account, role)
    if claims[CLAIM + "message_type"] == "LtiDeepLinkingRequest":
        if role != INSTRUCTOR:
            raise LtiError(403, "not_instructor", "only an instructor picks what a link opens")
        return signed_in(request, account, f"/lti/deep-link?dl={deep_link_token(ctx, claims, account, cid)}")
    aid = assignment_for(ctx, claims, cid)
    target = f"/courses/{cid}/assignments/{aid}" if aid else f"/courses/{cid}"
    return signed_in(request, account, target)


def deep_link_token(ctx, claims: dict, account: Account, cid: int) -> str:
    """What the deep linking page needs later, signed by the tool (no table, no tampering)."""
    settings = (claims.get(DL + "deep_linking_settings") or {})
    if not str(settings.get("deep_link_return_url") or "").startswith("http"):
        raise LtiError(400, "no_return_url", "the LMS gave no deep linking return URL")
    key = tool_key(ctx.settings)
    return jwt.encode({"alg": "RS256", "kid": key.kid}, {
        "iss": claims["iss"], "aud": claims["aud"] if isinstance(claims["aud"], str)
        else claims.get("azp") or claims["aud"][0],
        "dep": str(claims[CLAIM + "deployment_id"]), "ret": settings["deep_link_return_url"],
        "data": settings.get("data"), "acc": account.id, "cid": cid,
        "exp": int(time.time()) + DL_TTL_S}, key)


def _read_deep_link(request: Request, value: str) -> dict:
    ctx = request.app.state.ctx
    try:
        claims = jwt.decode(value[:8000], tool_key(ctx.settings), algorithms=["RS256"]).claims
    except (JoseError, ValueError):
        raise LtiError(400, "bad_deep_link", "this deep linking page is not ours") from None
    account = sessions.request_account(request)
    if claims.get("exp", 0) < time.time() or account is None or account.id != claims["acc"]:
        raise LtiError(403, "bad_deep_link", "this deep linking page is someone else's or old")
    return claims


@router.get("/lti/deep-link")
def deep_link_page(request: Request, dl: str = ""):
    try:
        claims = _read_deep_link(request, dl)
    except LtiError as exc:
        return failed(request, exc)
    items = courses.assignments(request.app.state.ctx.db, claims["cid"])
    return render(request, "lti_deep_link.html", dl=dl, assignments=items,
                  course_id=claims["cid"])


@router.post("/lti/deep-link")
async def deep_link_answer(request: Request):
    """The instructor's pick, as the signed LtiDeepLinkingResponse their browser posts back."""
    form = await request.form(max_files=0, max_fields=4)
    try:
        claims = _read_deep_link(request, str(form.get("dl") or ""))
        aid = str(form.get("assignment") or "")
        a = courses.assignment(request.app.state.ctx.db, claims["cid"], int(aid)) \
            if aid.isdigit() and len(aid) < 12 else None
        if a is None:
            raise LtiError(404, "no_assignment", "there is no such assignment in this course")
        answer = deep_link_response(request, claims, a)
    except courses.CourseError as exc:
        return failed(request, LtiError(exc.status, exc.code, exc.message))
    except LtiError as exc:
        return failed(request, exc)
    resp = render(request, "lti_deep_link_return.html", action=claims["ret"], jwt=answer,
                  title=a.title)
    origin = urlsplit(claims["ret"])
    resp.headers["x-kvp-form-action"] = f"{origin.scheme}://{origin.netloc}"
    return resp


def deep_link_response(request: Request, dl: dict, a: Assignment) -> str:
    ctx = request.app.state.ctx
    platform = find(ctx.settings, dl["iss"], dl["aud"])
    key = tool_key(ctx.settings)
    now = int(time.time())
    claims = {"iss": platform.client_id, "aud": platform.issuer, "iat": now, "exp": now + 600,
              "nonce": secrets.token_urlsafe(16),
              CLAIM + "message_type": "LtiDeepLinkingResponse", CLAIM + "version": "1.3.0",
              CLAIM + "deployment_id": dl["dep"],
              DL + "content_items": [{
                  "type": "ltiResourceLink", "title": a.title,
                  "url": str(request.url_for("lti_launch")),
                  "custom": {"assignment": str(a.id)},
                  "lineItem": {"scoreMaximum": 100, "label": a.title}}]}
    if dl.get("data") is not None:
        claims[DL + "data"] = dl["data"]
    return jwt.encode({"alg": "RS256", "kid": key.kid}, claims, key)

