"""LTI 1.3 (issue 30) against a stand-in LMS made here: a loopback HTTP server with the
platform's keys (JWKS), its token endpoint (checks the tool's signed client assertion) and a
line item's scores service (records what it is sent), and an RSA key generated for the test
that signs the platform's id tokens. The tool's side (web/lti) must: sign in the LMS's user and
place them in the mapped course, open the assignment an instructor picked by deep linking, send
the assignment's score back (deadline and late penalty applied) when it changes, and refuse a
forged or replayed launch, signing nobody in."""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
from accounts_support import make_assignment
from fastapi.testclient import TestClient
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey
from sqlalchemy import func, select

from web.app import create_app
from web.store.accounts import Account, LtiContext, Membership

from e2e.fake_grader import quick
from web_platform.test_api import ACCEPTED, make_settings, wait_done

CLIENT_ID, DEPLOYMENT = "kvp-tool", "dep-1"
CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"


class Lms:
    """The stand-in platform: its key, the tool's public keys once known, what it received."""

    def __init__(self):
        self.key = RSAKey.generate_key(2048, parameters={"kid": "lms-1"})
        self.tool_keys: KeySet | None = None
        self.scores: list[dict] = []
        self.token = "lms-access-token"
        lms = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _json(self, status: int, body) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                if self.path == "/jwks":
                    return self._json(200, {"keys": [lms.key.as_dict(private=False)]})
                self._json(404, {})

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/token":
                    return self._json(*lms.grant(parse_qs(body.decode())))
                if self.path.startswith("/lineitems/1/scores"):
                    if self.headers.get("Authorization") != f"Bearer {lms.token}":
                        return self._json(401, {})
                    lms.scores.append(json.loads(body))
                    return self._json(200, {})
                self._json(404, {})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def grant(self, form: dict) -> tuple[int, dict]:
        """The token endpoint: a client assertion signed by the tool's key, for this URL."""
        try:
            claims = jwt.decode(form["client_assertion"][0], self.tool_keys,
                                algorithms=["RS256"]).claims
        except Exception:
            return 401, {"error": "invalid_client"}
        if claims.get("aud") != self.base + "/token" or claims.get("iss") != CLIENT_ID:
            return 401, {"error": "invalid_client"}
        return 200, {"access_token": self.token, "expires_in": 3600, "token_type": "Bearer"}

    def platform(self) -> dict:
        return {"issuer": self.base, "client_id": CLIENT_ID, "auth_login_url": self.base + "/auth",
                "auth_token_url": self.base + "/token", "key_set_url": self.base + "/jwks",
                "deployment_ids": [DEPLOYMENT]}

    def id_token(self, nonce: str, sub: str, roles: list[str], message: str, key=None,
                 **extra) -> str:
        now = int(time.time())
        claims = {"iss": self.base, "aud": CLIENT_ID, "sub": sub, "nonce": nonce, "iat": now,
                  "exp": now + 300, "name": sub.title(),
                  CLAIM + "version": "1.3.0", CLAIM + "message_type": message,
                  CLAIM + "deployment_id": DEPLOYMENT, CLAIM + "roles": roles,
                  CLAIM + "context": {"id": "course-7", "title": "KV course"}, **extra}
        return jwt.encode({"alg": "RS256", "kid": "lms-1"}, claims, key or self.key)


@pytest.fixture
def lms():
    lms = Lms()
    yield lms
    lms.server.shutdown()


@pytest.fixture
def app(tmp_path, lms):
    app = create_app(make_settings(tmp_path, lti_platforms=json.dumps([lms.platform()])),
                     grader=quick, workers=1)
    with TestClient(app) as c:
        lms.tool_keys = KeySet.import_key_set(c.get("/lti/jwks.json").json())
        yield app


def login(c: TestClient, lms: Lms) -> dict:
    """Step 1 as the LMS starts it; the parameters the platform's authorize endpoint gets."""
    r = c.get("/lti/login", params={"iss": lms.base, "login_hint": "u", "client_id": CLIENT_ID,
                                    "target_link_uri": "http://testserver/lti/launch"},
              follow_redirects=False)
    assert r.status_code == 302, r.text
    assert r.headers["location"].startswith(lms.base + "/auth?")
    return {k: v[0] for k, v in parse_qs(urlsplit(r.headers["location"]).query).items()}


def launch(c: TestClient, lms: Lms, sub: str, roles: list[str], message: str =
           "LtiResourceLinkRequest", key=None, **extra):
    asked = login(c, lms)
    token = lms.id_token(asked["nonce"], sub, roles, message, key=key, **extra)
    r = c.post("/lti/launch", data={"id_token": token, "state": asked["state"]},
               headers={"Origin": lms.base}, follow_redirects=False)  # the LMS's form post
    return r, token, asked


def _accounts(app) -> int:
    with app.state.ctx.db.session() as s:
        return s.scalar(select(func.count()).select_from(Account))


def test_deep_link_launch_and_the_score_back_to_the_lms(app, lms):
    teacher = TestClient(app)
    dl_settings = {"deep_link_return_url": lms.base + "/deep-link-return", "data": "opaque-7",
                   "accept_types": ["ltiResourceLink"]}
    r, _, _ = launch(teacher, lms, "prof-1", [INSTRUCTOR], "LtiDeepLinkingRequest",
                     **{"https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings":
                        dl_settings})
    assert r.status_code == 303 and r.headers["location"].startswith("/lti/deep-link?dl="), r.text
    with app.state.ctx.db.session() as s:
        cid = s.scalar(select(LtiContext.course_id).where(LtiContext.context_id == "course-7"))
    assert cid is not None  # the instructor's first launch made and mapped the course
    now = datetime.now(timezone.utc)
    aid = make_assignment(teacher, cid, "901", now - timedelta(minutes=1),
                          late_until=now + timedelta(hours=1), penalty=20,
                          opens=now - timedelta(hours=1))
    page = teacher.get(r.headers["location"])
    assert page.status_code == 200 and 'id="deep-link-form"' in page.text
    dl = page.text.split('name="dl" value="', 1)[1].split('"', 1)[0]
    answer = teacher.post("/lti/deep-link", data={"dl": dl, "assignment": str(aid)},
                          headers={"Origin": "http://testserver"})
    assert answer.status_code == 200, answer.text
    assert f"form-action 'self' {lms.base}" in answer.headers["content-security-policy"]
    sent = answer.text.split('name="JWT" value="', 1)[1].split('"', 1)[0]
    item = jwt.decode(sent, lms.tool_keys, algorithms=["RS256"]).claims
    assert (item["iss"], item["aud"], item[CLAIM + "message_type"]) == \
        (CLIENT_ID, lms.base, "LtiDeepLinkingResponse")
    assert item["https://purl.imsglobal.org/spec/lti-dl/claim/data"] == "opaque-7"
    (link,) = item["https://purl.imsglobal.org/spec/lti-dl/claim/content_items"]
    assert link["custom"] == {"assignment": str(aid)} and link["url"].endswith("/lti/launch")

    # The student opens the link in the LMS: signed in, in the course, on the assignment.
    student = TestClient(app)
    ags = {"https://purl.imsglobal.org/spec/lti-ags/claim/endpoint": {
        "lineitem": lms.base + "/lineitems/1", "scope": [
            "https://purl.imsglobal.org/spec/lti-ags/scope/score"]}}
    r, _, _ = launch(student, lms, "stud-1", [LEARNER], **{
        CLAIM + "resource_link": {"id": "link-1"}, CLAIM + "custom": link["custom"]}, **ags)
    assert r.headers["location"] == f"/courses/{cid}/assignments/{aid}", r.text
    assert "Homework" in student.get(r.headers["location"]).text
    with app.state.ctx.db.session() as s:
        roles = dict(s.execute(select(Account.oidc_subject, Membership.role)
                               .join(Membership, Membership.account_id == Account.id)
                               .where(Membership.course_id == cid)).all())
    assert roles == {f"{lms.base}|prof-1": "instructor", f"{lms.base}|stud-1": "student"}
    # a late AC: the LMS gets 80 of 100 (the gradebook's number), once
    sub = student.post("/api/submissions", json={"problem": "901", "code": ACCEPTED},
                       headers={"Origin": "http://testserver"})
    wait_done(student, sub.json()["id"])
    from web.lti.scores import sync
    assert sync(app.state.ctx) == 1
    assert [(s["userId"], s["scoreGiven"], s["scoreMaximum"]) for s in lms.scores] == \
        [("stud-1", 80.0, 100)]
    assert sync(app.state.ctx) == 0 and len(lms.scores) == 1  # unchanged: not sent again


def test_a_forged_or_replayed_launch_signs_nobody_in(app, lms):
    c = TestClient(app)
    link = {CLAIM + "resource_link": {"id": "link-9"}}
    # an instructor's launch maps the course first, so that students' launches have one
    assert launch(TestClient(app), lms, "prof-2", [INSTRUCTOR], **link)[0].status_code == 303
    before = _accounts(app)
    stranger = RSAKey.generate_key(2048, parameters={"kid": "lms-1"})  # same kid, other key
    r, _, _ = launch(c, lms, "eve", [INSTRUCTOR], key=stranger, **link)
    assert r.status_code == 401 and "kvp_session" not in r.headers.get("set-cookie", "")
    assert _accounts(app) == before
    r, token, asked = launch(c, lms, "stud-2", [LEARNER], **link)
    assert r.status_code == 303
    again = c.post("/lti/launch", data={"id_token": token, "state": asked["state"]},
                   follow_redirects=False)
    assert again.status_code == 401  # the same launch posted again: its state is spent
    fresh = login(c, lms)  # a new state, the old token (its nonce is another login's)
    again = c.post("/lti/launch", data={"id_token": token, "state": fresh["state"]},
                   follow_redirects=False)
    assert again.status_code == 401
    other_browser = TestClient(app)
    asked = login(c, lms)
    r = other_browser.post("/lti/launch", data={"state": asked["state"], "id_token": lms.id_token(
        asked["nonce"], "stud-3", [LEARNER], "LtiResourceLinkRequest", **link)},
        follow_redirects=False)
    assert r.status_code == 401  # a state this browser was never given
    for wrong in ({"aud": "another-tool"}, {"exp": int(time.time()) - 600},
                  {CLAIM + "deployment_id": "dep-unknown"}, {CLAIM + "version": "1.1"}):
        asked = login(c, lms)
        token = lms.id_token(asked["nonce"], "stud-4", [LEARNER], "LtiResourceLinkRequest",
                             **{**link, **wrong})
        r = c.post("/lti/launch", data={"id_token": token, "state": asked["state"]},
                   follow_redirects=False)
        assert r.status_code == 401, wrong
    assert _accounts(app) == before + 1  # stud-2 only
    unknown = c.get("/lti/login", params={"iss": "https://evil.example", "login_hint": "u"})
    assert unknown.status_code == 400
