"""Scores back to the LMS (LTI Assignment and Grade Services): for each resource link with a
line item, each LMS student's number for the assignment, our gradebook's `total_percent`
(deadline and late penalty applied: web.store.assignment_book), posted to the line item's
scores when it differs from the last one sent. The tool asks the platform's token endpoint for
an access token with a JWT signed by its own key (client credentials, RFC 7523)."""

from __future__ import annotations

import logging
import secrets
import threading
import time
from datetime import datetime, timezone
from urllib.parse import urlsplit, urlunsplit

from joserfc import jwt
from sqlalchemy import select

from web.lti.platforms import LtiError, find, post, tool_key
from web.store.accounts import Account, Assignment, LtiResource, LtiScoreSent
from web.store.assignment_book import TODO, assignment_book
from web.store.db import utcnow

log = logging.getLogger("web.lti.scores")
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
_tokens: dict[str, tuple[float, str]] = {}


def access_token(settings, platform) -> str:
    got = _tokens.get(platform.issuer)
    if got and got[0] > time.monotonic():
        return got[1]
    key, now = tool_key(settings), int(time.time())
    assertion = jwt.encode({"alg": "RS256", "kid": key.kid}, {
        "iss": platform.client_id, "sub": platform.client_id, "aud": platform.auth_token_url,
        "iat": now, "exp": now + 300, "jti": secrets.token_urlsafe(16)}, key)
    r = post(settings, platform.auth_token_url, data={
        "grant_type": "client_credentials", "scope": SCORE_SCOPE,
        "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
        "client_assertion": assertion})
    body = r.json() if r.status_code == 200 else {}
    if not isinstance(body.get("access_token"), str):
        raise LtiError(502, "no_token", f"the LMS gave no access token ({r.status_code})")
    life = float(body.get("expires_in") or 300)
    _tokens[platform.issuer] = (time.monotonic() + max(0.0, life - 30), body["access_token"])
    return body["access_token"]


def scores_url(lineitem: str) -> str:
    """The line item's scores service: its path and "/scores", its query kept."""
    parts = urlsplit(lineitem)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


def send(settings, resource: LtiResource, user_id: str, percent: float, state: str) -> None:
    platform = find(settings, resource.issuer)
    if resource.lineitem_url is None:  # a link without a gradebook column (sync sends none)
        raise LtiError(409, "no_lineitem", "the LMS gave this link no gradebook column")
    r = post(settings, scores_url(resource.lineitem_url), json={
        "userId": user_id, "scoreGiven": percent, "scoreMaximum": 100,
        "activityProgress": "Completed" if state != TODO else "Initialized",
        "gradingProgress": "FullyGraded",
        "timestamp": datetime.now(timezone.utc).isoformat(timespec="milliseconds")},
        headers={"Authorization": f"Bearer {access_token(settings, platform)}",
                 "Content-Type": SCORE_TYPE})
    if r.status_code not in (200, 201, 202, 204):
        raise LtiError(502, "score_refused", f"the LMS refused the score ({r.status_code})")


def sync(ctx) -> int:
    """Send every changed score; how many were sent. A failing LMS is logged and tried again
    at the next sync (nothing is recorded as sent that was not)."""
    sent = 0
    with ctx.db.session() as s:
        resources = list(s.scalars(select(LtiResource).where(LtiResource.lineitem_url.is_not(None))))
    for resource in resources:
        try:
            sent += _sync_one(ctx, resource)
        except LtiError as exc:
            log.warning("scores of LTI link %s not sent: %s", resource.id, exc.message)
    return sent


def _sync_one(ctx, resource: LtiResource) -> int:
    with ctx.db.session() as s:
        a = s.get(Assignment, resource.assignment_id)
        last = {r.account_id: r for r in s.scalars(select(LtiScoreSent).where(
            LtiScoreSent.resource_id == resource.id))}
    book = assignment_book(ctx.db, a)
    prefix, sent = resource.issuer + "|", 0
    for st in book["students"]:
        before = last.get(st["account"])
        if (before is not None and before.score_percent == st["total_percent"]) or \
                (before is None and st["state"] == TODO):
            continue
        with ctx.db.session() as s:
            subject = s.scalar(select(Account.oidc_subject).where(Account.id == st["account"]))
        if not subject or not subject.startswith(prefix):
            continue  # not an account of this LMS
        send(ctx.settings, resource, subject[len(prefix):], st["total_percent"], st["state"])
        _record(ctx, resource.id, st["account"], st["total_percent"])
        sent += 1
    return sent


def _record(ctx, resource_id: int, account_id: int, percent: float) -> None:
    with ctx.db.session() as s:
        row = s.scalar(select(LtiScoreSent).where(LtiScoreSent.resource_id == resource_id,
                                                  LtiScoreSent.account_id == account_id))
        if row is None:
            s.add(LtiScoreSent(resource_id=resource_id, account_id=account_id,
                               score_percent=percent))
        else:
            row.score_percent, row.sent_at = percent, utcnow()
        s.commit()


def start_syncing(ctx, stop: threading.Event) -> threading.Thread:
    """Scores change when a submission is graded, a regrade approved or a deadline moved: a
    sync every settings.lti_sync_s catches them all."""
    def loop():
        while not stop.wait(ctx.settings.lti_sync_s):
            try:
                sync(ctx)
            except Exception:
                log.exception("LTI score sync failed")
    t = threading.Thread(target=loop, name="lti-scores", daemon=True)
    t.start()
    return t
