"""Single sign-on through OpenID Connect against a small provider made here: a loopback HTTP
server with discovery, authorize, token and JWKS endpoints and an RSA key generated for the test,
whose id tokens are signed with it. The platform's side (web/accounts/oidc.py, authlib) must
check the state and the nonce and the signature, make an account on the first sign-in and find
the same one by the provider's `sub` afterwards."""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi.testclient import TestClient
from sqlalchemy import select

from web.app import create_app
from web.store.accounts import Account, AuthSession

from e2e.fake_grader import quick
from web_platform.test_web_api import make_settings

with warnings.catch_warnings():  # deprecated for joserfc since authlib 1.6; here since 1.3
    warnings.simplefilter("ignore")
    from authlib.jose import JsonWebKey, jwt

CLIENT_ID, CLIENT_SECRET = "kv-practice", "provider-shared-secret"


def _rsa_jwk(kid: str):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    jwk = JsonWebKey.import_key(pem, {"kty": "RSA", "kid": kid})
    return jwk


class Provider:
    """The identity provider: one user at a time (`user`), codes kept until redeemed once.
    `tamper` makes the next id token wrong in one way: 'nonce', 'audience' or 'key'."""

    def __init__(self):
        self.key, self.stranger = _rsa_jwk("k1"), _rsa_jwk("k1")  # same kid, another key
        self.codes: dict[str, dict] = {}
        self.user = {"sub": "u-1001", "preferred_username": "li.wei", "name": "Li Wei"}
        self.tamper = None
        self.token_calls = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _json(self, body, status=200):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                url = urlparse(self.path)
                if url.path == "/.well-known/openid-configuration":
                    return self._json(provider.discovery())
                if url.path == "/jwks":
                    return self._json({"keys": [provider.key.as_dict(is_private=False)]})
                if url.path == "/authorize":
                    q = {k: v[0] for k, v in parse_qs(url.query).items()}
                    assert q["client_id"] == CLIENT_ID and q["response_type"] == "code"
                    assert "openid" in q["scope"].split()
                    code = secrets.token_urlsafe(12)
                    provider.codes[code] = {"nonce": q.get("nonce"), "user": dict(provider.user),
                                            "redirect_uri": q["redirect_uri"]}
                    self.send_response(302)
                    self.send_header("Location", q["redirect_uri"] + "?" + urlencode(
                        {"code": code, "state": q["state"]}))
                    self.end_headers()
                    return
                self._json({"error": "not_found"}, 404)

            def do_POST(self):
                if urlparse(self.path).path != "/token":
                    return self._json({"error": "not_found"}, 404)
                body = self.rfile.read(int(self.headers["Content-Length"])).decode()
                form = {k: v[0] for k, v in parse_qs(body).items()}
                provider.token_calls.append(form)
                auth = self.headers.get("Authorization", "")
                basic = base64.b64decode(auth[6:]).decode() if auth.startswith("Basic ") else ""
                if basic != f"{CLIENT_ID}:{CLIENT_SECRET}" and not (
                        form.get("client_id") == CLIENT_ID
                        and form.get("client_secret") == CLIENT_SECRET):
                    return self._json({"error": "invalid_client"}, 401)
                grant = provider.codes.pop(form.get("code", ""), None)
                if grant is None or grant["redirect_uri"] != form.get("redirect_uri"):
                    return self._json({"error": "invalid_grant"}, 400)
                return self._json({"access_token": secrets.token_urlsafe(16),
                                   "token_type": "Bearer", "expires_in": 300,
                                   "id_token": provider.id_token(grant)})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.issuer = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def discovery(self) -> dict:
        return {"issuer": self.issuer, "authorization_endpoint": self.issuer + "/authorize",
                "token_endpoint": self.issuer + "/token", "jwks_uri": self.issuer + "/jwks",
                "response_types_supported": ["code"], "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic",
                                                          "client_secret_post"]}

    def id_token(self, grant: dict) -> str:
        now = int(time.time())
        claims = {"iss": self.issuer, "aud": CLIENT_ID, "iat": now, "exp": now + 300,
                  "nonce": grant["nonce"], **grant["user"]}
        key, tamper, self.tamper = self.key, self.tamper, None
        if tamper == "nonce":
            claims["nonce"] = "not-the-one-sent"
        elif tamper == "audience":
            claims["aud"] = "another-client"
        elif tamper == "key":
            key = self.stranger
        return jwt.encode({"alg": "RS256", "kid": "k1"}, claims, key).decode()


@pytest.fixture
def provider():
    p = Provider()
    p.thread.start()
    yield p
    p.httpd.shutdown()


@pytest.fixture
def app(tmp_path, provider):
    settings = make_settings(tmp_path, oidc_issuer=provider.issuer, oidc_client_id=CLIENT_ID,
                             oidc_client_secret=CLIENT_SECRET)
    app = create_app(settings, grader=quick, workers=1)
    with TestClient(app):
        yield app


def _sign_in(c: TestClient, provider: Provider, state: str | None = None):
    """The browser's trip: platform -> provider -> platform's callback; the callback's answer."""
    start = c.get("/auth/oidc/login", follow_redirects=False)
    assert start.status_code == 302, start.text
    to_provider = urlparse(start.headers["location"])
    assert f"{to_provider.scheme}://{to_provider.netloc}" == provider.issuer
    q = parse_qs(to_provider.query)
    assert q["nonce"][0] and q["state"][0]  # both sent, to be checked on the way back
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(start.headers["location"])
        raise AssertionError("the provider did not redirect")
    except urllib.error.HTTPError as exc:
        assert exc.code == 302
        back = urlparse(exc.headers["Location"])
    query = parse_qs(back.query)
    if state is not None:
        query["state"] = [state]
    assert back.path == "/auth/oidc/callback"
    return c.get(back.path + "?" + urlencode({k: v[0] for k, v in query.items()}),
                 follow_redirects=False)


def test_the_login_page_offers_the_school_account(app):
    assert 'href="/auth/oidc/login"' in TestClient(app).get("/login").text


def test_first_sign_in_makes_an_account_and_the_next_finds_it_by_sub(app, provider):
    c = TestClient(app)
    r = _sign_in(c, provider)
    assert r.status_code == 303 and r.headers["location"] == "/courses", r.text
    assert "kvp_session=" in r.headers["set-cookie"] and "HttpOnly" in r.headers["set-cookie"]
    assert "Li Wei" in c.get("/courses").text
    with app.state.ctx.db.session() as s:
        (account,) = s.scalars(select(Account)).all()
        assert account.oidc_subject == f"{provider.issuer}|u-1001"
        assert account.username == "li.wei" and account.password_hash is None
        first_id = account.id
    assert provider.token_calls[-1]["grant_type"] == "authorization_code"

    # another browser, the same person renamed at the school: the same account, by `sub`
    provider.user = {"sub": "u-1001", "preferred_username": "wei.li", "name": "Wei Li"}
    other = TestClient(app)
    assert _sign_in(other, provider).status_code == 303
    # a second person whose wished username is taken gets another one
    provider.user = {"sub": "u-2002", "preferred_username": "li.wei", "name": "Li Wei (2)"}
    third = TestClient(app)
    assert _sign_in(third, provider).status_code == 303
    with app.state.ctx.db.session() as s:
        rows = {a.oidc_subject: a for a in s.scalars(select(Account))}
        assert len(rows) == 2 and rows[f"{provider.issuer}|u-1001"].id == first_id
        assert rows[f"{provider.issuer}|u-2002"].username.startswith("sso-")
        assert len(s.scalars(select(AuthSession)).all()) == 3
    # no password sign-in for an account made by the provider
    r = other.post("/login", content=b"username=li.wei&password=", headers={
        "Content-Type": "application/x-www-form-urlencoded", "Origin": "http://testserver"},
        follow_redirects=False)
    assert r.status_code == 401


@pytest.mark.parametrize("tamper", ["nonce", "audience", "key"])
def test_a_wrong_id_token_signs_nobody_in(app, provider, tamper):
    provider.tamper = tamper
    c = TestClient(app)
    r = _sign_in(c, provider)
    assert r.status_code == 400 and "kvp_session=" not in r.headers.get("set-cookie", "")
    assert "single sign-on" in r.text.lower()
    with app.state.ctx.db.session() as s:
        assert s.scalars(select(Account)).all() == []


def test_a_wrong_or_missing_state_signs_nobody_in(app, provider):
    c = TestClient(app)
    assert _sign_in(c, provider, state="forged").status_code == 400
    # a callback with no flow started in this browser (a code sent to someone else)
    stranger = TestClient(app)
    r = stranger.get("/auth/oidc/callback?code=abc&state=xyz", follow_redirects=False)
    assert r.status_code == 400
    assert stranger.get("/auth/oidc/callback?error=access_denied&state=xyz",
                        follow_redirects=False).status_code == 400
    with app.state.ctx.db.session() as s:
        assert s.scalars(select(Account)).all() == []
    assert "单点登录" in stranger.get("/auth/oidc/callback?code=abc&state=xyz&lang=zh").text
