"""A client of the platform's HTTP API, for `practice/judge.py test N --remote URL`.

It submits a file, follows the submission's Server-Sent Events and hands each progress event to a
callback (the same event dicts `judge.grade()` emits, so the local progress bar works unchanged),
then fetches the stored Report. The visitor token the server issues is kept per server in a small
JSON file, so a student's remote submissions stay theirs across runs.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable

import httpx

from judge.vocabulary import Event

__all__ = ["RemoteError", "PlatformClient"]


class RemoteError(RuntimeError):
    """The server refused or could not be reached; the message is the server's own when it sent one."""


def _explain(resp: httpx.Response) -> str:
    try:
        err = resp.json().get("error", {})
        return f"{resp.status_code} {err.get('code', '')}: {err.get('message', resp.text)}".strip()
    except ValueError:
        return f"{resp.status_code}: {resp.text[:200]}"


class PlatformClient:
    def __init__(self, base_url: str, token_file: Path | None = None, timeout_s: float = 30.0,
                 http: httpx.Client | None = None):
        self.base_url = base_url.rstrip("/")
        self.token_file = token_file
        self.http = http or httpx.Client(base_url=self.base_url, timeout=timeout_s)
        self._token: str | None = None

    # -- identity ---------------------------------------------------------------------------------

    def _tokens(self) -> dict:
        if self.token_file is None or not self.token_file.exists():
            return {}
        try:
            return json.loads(self.token_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def token(self) -> str:
        if self._token is None:
            self._token = self._load_or_issue_token()
        return self._token

    def _load_or_issue_token(self) -> str:
        tokens = self._tokens()
        if self.base_url in tokens:
            return tokens[self.base_url]
        resp = self._request("POST", "/api/visitors")
        token = resp.json()["token"]
        if self.token_file is not None:
            tokens[self.base_url] = token
            self.token_file.parent.mkdir(parents=True, exist_ok=True)
            self.token_file.write_text(json.dumps(tokens), encoding="utf-8")
            os.chmod(self.token_file, 0o600)
        return token

    def _request(self, method: str, path: str, **kw) -> httpx.Response:
        try:
            resp = self.http.request(method, path, **kw)
        except httpx.HTTPError as e:
            raise RemoteError(f"cannot reach {self.base_url}: {e}") from None
        if resp.status_code >= 400:
            raise RemoteError(_explain(resp))
        return resp

    # -- grading ----------------------------------------------------------------------------------

    def submit(self, problem: str, code: str) -> int:
        auth = {"Authorization": f"Bearer {self.token()}"}
        resp = self._request("POST", "/api/submissions", json={"problem": problem, "code": code},
                             headers=auth)
        return resp.json()["id"]

    def follow(self, submission_id: int, on_event: Callable[[dict], None] | None = None,
               deadline_s: float = 3600.0) -> dict:
        """Stream the submission's events until it is done; return its Report. A dropped stream is
        resumed from the last event id, so no event is lost or repeated."""
        auth = {"Authorization": f"Bearer {self.token()}"}
        last_id, stop_at = None, time.monotonic() + deadline_s
        while time.monotonic() < stop_at:
            headers = dict(auth)
            if last_id is not None:
                headers["Last-Event-ID"] = last_id
            try:
                with self.http.stream("GET", f"/api/submissions/{submission_id}/events",
                                      headers=headers, timeout=httpx.Timeout(30.0, read=60.0)) as resp:
                    if resp.status_code >= 400:
                        resp.read()
                        raise RemoteError(_explain(resp))
                    for event_id, data in _sse(resp.iter_lines()):
                        last_id = event_id or last_id
                        if on_event is not None and data.get("type") != Event.DONE:
                            on_event(data)
                        if data.get("type") == Event.DONE:
                            return self.report(submission_id)
            except (httpx.TransportError, httpx.StreamError):
                time.sleep(1.0)  # the server restarted or the connection dropped: resume
        raise RemoteError(f"submission {submission_id} was not graded within {deadline_s:.0f} s")

    def report(self, submission_id: int) -> dict:
        auth = {"Authorization": f"Bearer {self.token()}"}
        data = self._request("GET", f"/api/submissions/{submission_id}", headers=auth).json()
        if data.get("status") != "done" or not data.get("report"):
            raise RemoteError(f"submission {submission_id} is {data.get('status')}, not done")
        return data["report"]


def _sse(lines):
    """(event id, data dict) per Server-Sent Event; comments and retry lines are skipped."""
    event_id, data = None, []
    for line in lines:
        if not line:
            if data:
                try:
                    yield event_id, json.loads("\n".join(data))
                except ValueError:
                    pass
            event_id, data = None, []
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif line.startswith("id:"):
            event_id = line[3:].strip()
