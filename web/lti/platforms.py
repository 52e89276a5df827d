"""The LMS platforms this tool trusts, its own signing key, and the bounded HTTP it speaks to
them. A platform is registered by the server's operator (settings.lti_platforms); nothing a
request says adds one. The tool's RSA key is made on first use and kept in the data directory
(0600); its public half is published at /lti/jwks.json for the platforms."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
from joserfc.jwk import KeySet, RSAKey

if TYPE_CHECKING:
    from joserfc.jwk import KeySetSerialization

KEY_CACHE_S = 300.0  # a platform's keys are fetched again after this long (they rotate)


class LtiError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


@dataclass(frozen=True)
class Platform:
    issuer: str
    client_id: str
    auth_login_url: str
    auth_token_url: str
    key_set_url: str
    deployment_ids: tuple[str, ...]


def platforms(settings) -> list[Platform]:
    raw = settings.lti_platforms
    if not raw:
        return []
    text = Path(raw).read_text(encoding="utf-8") if not raw.lstrip().startswith("[") else raw
    return [Platform(issuer=p["issuer"], client_id=p["client_id"],
                     auth_login_url=p["auth_login_url"], auth_token_url=p["auth_token_url"],
                     key_set_url=p["key_set_url"],
                     deployment_ids=tuple(p.get("deployment_ids") or ()))
            for p in json.loads(text)]


def find(settings, issuer: str, client_id: str | None = None) -> Platform:
    for p in platforms(settings):
        if p.issuer == issuer and (client_id is None or p.client_id == client_id):
            return p
    raise LtiError(400, "unknown_platform", "This LMS is not registered with this server.")


_key_lock = threading.Lock()


def tool_key(settings) -> RSAKey:
    """The tool's private key (made once, kept as a JWK readable by this user only)."""
    path = settings.data_dir / "lti-tool-key.json"
    with _key_lock:
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            key = RSAKey.generate_key(2048, parameters={"kid": f"tool-{int(time.time())}",
                                                        "use": "sig", "alg": "RS256"})
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump(key.as_dict(private=True), f)
        return RSAKey.import_key(json.loads(path.read_text()))


def tool_jwks(settings) -> dict:
    return {"keys": [tool_key(settings).as_dict(private=False)]}


def _bounded(settings, method: str, url: str, **kw) -> httpx.Response:
    """One request to an LMS, answered whole within lti_timeout_s and lti_max_bytes."""
    deadline = time.monotonic() + settings.lti_timeout_s
    try:
        with httpx.Client(timeout=settings.lti_timeout_s, follow_redirects=False) as client:
            with client.stream(method, url, headers={"Accept-Encoding": "identity",
                                                     **kw.pop("headers", {})}, **kw) as r:
                body = b""
                for chunk in r.iter_bytes():
                    body += chunk
                    if len(body) > settings.lti_max_bytes or time.monotonic() > deadline:
                        raise LtiError(502, "lms_answer_too_large", "The LMS's answer was "
                                       "too large or too slow.")
                return httpx.Response(r.status_code, headers=r.headers, content=body)
    except httpx.HTTPError as exc:
        raise LtiError(502, "lms_unreachable", f"The LMS did not answer: {exc}") from None


def get_json(settings, url: str) -> dict:
    r = _bounded(settings, "GET", url)
    if r.status_code != 200:
        raise LtiError(502, "lms_error", f"The LMS answered {r.status_code}.")
    return r.json()


def post(settings, url: str, **kw) -> httpx.Response:
    return _bounded(settings, "POST", url, **kw)


_keys: dict[str, tuple[float, KeySet]] = {}


def platform_keys(settings, platform: Platform, refresh: bool = False) -> KeySet:
    """The platform's public keys (its JWKS), cached for KEY_CACHE_S."""
    got = _keys.get(platform.key_set_url)
    if got is None or refresh or time.monotonic() - got[0] > KEY_CACHE_S:
        keys = KeySet.import_key_set(_key_set(get_json(settings, platform.key_set_url)))
        got = _keys[platform.key_set_url] = (time.monotonic(), keys)
    return got[1]


def _key_set(data: dict) -> KeySetSerialization:
    """A platform's JWKS as joserfc reads it: {"keys": [a JWK, ...]}."""
    keys = data.get("keys")
    if not isinstance(keys, list) or not all(isinstance(k, dict) for k in keys):
        raise LtiError(502, "lms_error", "The LMS's key set is not a JWKS.")
    return {"keys": keys}
