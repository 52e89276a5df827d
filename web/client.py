"""The one HTTP client of the platform's API, for every caller on another host: a student's
`practice/judge.py test N --remote URL` (`PlatformClient`), a remote grading worker
(`WorkerClient`, with `web.jobs.remote_backend`) and the instructors' `judge regrade` /
`judge parity` (`ApiClient.exchange`).

Errors are the server's own (`ApiError`: "404 unknown_problem: ..."), or `ServerUnreachable`.
A call may ask to be retried with backoff while the server is unreachable or answers 5xx
(a restart): the worker's claims and results must not be lost.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import httpx

from judge.judging.vocabulary import Event

__all__ = ["ApiClient", "ApiError", "PlatformClient", "RemoteError", "ServerUnreachable",
           "WorkerClient", "WORKER_HEADER", "INSTRUCTOR_HEADER"]

log = logging.getLogger(__name__)
WORKER_HEADER = "X-Worker-Token"
INSTRUCTOR_HEADER = "X-Instructor-Token"
# (connect, read, write, pool): a plain tuple, not an httpx.Timeout, because the client may be
# a Starlette TestClient, which is built on httpx2 and refuses the other package's Timeout
_STREAM_TIMEOUT = (30.0, 60.0, 30.0, 30.0)


class RemoteError(RuntimeError):
    """The server refused, failed or could not be reached."""


class ApiError(RemoteError):
    """A 4xx (or, retries spent, 5xx) answer, with the error body's code and message."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(f"{status} {code}: {message}".strip())
        self.status, self.code = status, code

    @classmethod
    def of(cls, resp: httpx.Response) -> ApiError:
        try:
            err = resp.json().get("error", {})
        except (ValueError, AttributeError):
            err = {}
        return cls(resp.status_code, err.get("code", ""), err.get("message", resp.text[:200]))


class ServerUnreachable(RemoteError):
    pass


class ApiClient:
    """`headers` go with every request (a worker's or an instructor's token)."""

    def __init__(self, base_url: str, headers: dict | None = None, timeout_s: float = 30.0,
                 http: httpx.Client | None = None):
        self.base_url = base_url.rstrip("/")
        self.headers = dict(headers or {})
        self.http = http or httpx.Client(base_url=self.base_url, timeout=timeout_s)
        self._down_since: float | None = None

    def request(self, method: str, path: str, *, json: dict | None = None,
                headers: dict | None = None, retry_for_s: float = 0.0,
                stop: threading.Event | None = None) -> httpx.Response:
        """The answer (< 400). Connection failures and 5xx answers are retried with backoff for
        up to `retry_for_s` seconds (until `stop` is set); then ServerUnreachable, or ApiError
        for a 5xx. A 4xx raises ApiError at once."""
        deadline, delay = time.monotonic() + retry_for_s, 0.25
        while True:
            try:
                resp = self.http.request(method, path, json=json,
                                         headers={**self.headers, **(headers or {})})
            except httpx.HTTPError as exc:
                failed, why = None, f"cannot reach {self.base_url}: {type(exc).__name__}: {exc}"
            else:
                if resp.status_code < 500:
                    self._up()
                    if resp.status_code >= 400:
                        raise ApiError.of(resp)
                    return resp
                failed, why = resp, f"{self.base_url}{path}: HTTP {resp.status_code}"
            if time.monotonic() + delay > deadline or (stop is not None and stop.is_set()):
                if failed is not None:
                    raise ApiError.of(failed)
                raise ServerUnreachable(why)
            self._down(why)
            (stop.wait if stop is not None else time.sleep)(delay)
            delay = min(delay * 2, 5.0) * random.uniform(0.8, 1.2)

    def post(self, path: str, body: dict, **kw) -> dict:
        return self.request("POST", path, json=body, **kw).json()

    def exchange(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        """(status, JSON body) whatever the status; only an unreachable server raises."""
        try:
            resp = self.http.request(method, path, json=body, headers=self.headers)
        except httpx.HTTPError as exc:
            raise ServerUnreachable(f"cannot reach {self.base_url}: {exc}") from None
        try:
            return resp.status_code, resp.json()
        except ValueError:
            return resp.status_code, {"error": {"code": "bad_response",
                                                "message": resp.text[:300]}}

    def events(self, path: str, headers: dict, last_id: str | None
               ) -> Iterator[tuple[str | None, dict]]:
        """(event id, data) of a Server-Sent Events stream, from after `last_id`."""
        headers = {**self.headers, **headers}
        if last_id is not None:
            headers["Last-Event-ID"] = last_id
        with self.http.stream("GET", path, headers=headers,
                              timeout=_STREAM_TIMEOUT) as resp:
            if resp.status_code >= 400:
                resp.read()
                raise ApiError.of(resp)
            yield from _sse(resp.iter_lines())

    def _down(self, why: str) -> None:
        if self._down_since is None:
            self._down_since = time.monotonic()
            log.warning("the server does not answer (%s); retrying with backoff", why)

    def _up(self) -> None:
        if self._down_since is not None:
            log.warning("the server %s answers again (after %.1f s)", self.base_url,
                        time.monotonic() - self._down_since)
            self._down_since = None


class WorkerClient(ApiClient):
    """A remote grading worker's client: its token on every call, POST only."""

    def __init__(self, server: str, token: str, timeout_s: float = 15.0,
                 http: httpx.Client | None = None):
        super().__init__(server, {WORKER_HEADER: token}, timeout_s, http)

    def call(self, path: str, body: dict, retry_for_s: float = 0.0,
             stop: threading.Event | None = None) -> dict:
        return self.post(path, body, retry_for_s=retry_for_s, stop=stop)


class PlatformClient(ApiClient):
    """A student's client: submits a file, follows its events (the same dicts `judge.grade()`
    emits, so the local progress display works unchanged) and fetches the Report. The visitor
    token the server issues is kept per server in `token_file`, so a student's remote
    submissions stay theirs across runs."""

    def __init__(self, base_url: str, token_file: Path | None = None, timeout_s: float = 30.0,
                 http: httpx.Client | None = None):
        super().__init__(base_url, None, timeout_s, http)
        self.token_file = token_file
        self._token: str | None = None

    def _tokens(self) -> dict:
        if self.token_file is None or not self.token_file.exists():
            return {}
        try:
            return json.loads(self.token_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    def token(self) -> str:
        if self._token is None:
            tokens = self._tokens()
            if self.base_url not in tokens:
                tokens[self.base_url] = self.request("POST", "/api/visitors").json()["token"]
                if self.token_file is not None:
                    self.token_file.parent.mkdir(parents=True, exist_ok=True)
                    self.token_file.write_text(json.dumps(tokens), encoding="utf-8")
                    os.chmod(self.token_file, 0o600)
            self._token = tokens[self.base_url]
        return self._token

    def _auth(self) -> dict:
        return {"Authorization": f"Bearer {self.token()}"}

    def submit(self, problem: str, code: str) -> int:
        return self.request("POST", "/api/submissions", json={"problem": problem, "code": code},
                            headers=self._auth()).json()["id"]

    def follow(self, submission_id: int, on_event: Callable[[dict], None] | None = None,
               deadline_s: float = 3600.0) -> dict:
        """Stream the submission's events until it is done; return its Report. A dropped stream
        is resumed from the last event id, so no event is lost or repeated."""
        last_id, stop_at = None, time.monotonic() + deadline_s
        while time.monotonic() < stop_at:
            try:
                for event_id, data in self.events(f"/api/submissions/{submission_id}/events",
                                                  self._auth(), last_id):
                    last_id = event_id or last_id
                    if data.get("type") == Event.DONE:
                        # the one "done" carries the Report (an older server's does not)
                        return data.get("report") or self.report(submission_id)
                    if on_event is not None:
                        on_event(data)
            except (httpx.TransportError, httpx.StreamError):
                time.sleep(1.0)  # the server restarted or the connection dropped: resume
        raise RemoteError(f"submission {submission_id} was not graded within {deadline_s:.0f} s")

    def report(self, submission_id: int) -> dict:
        data = self.request("GET", f"/api/submissions/{submission_id}",
                            headers=self._auth()).json()
        if data.get("status") != "done" or not data.get("report"):
            raise RemoteError(f"submission {submission_id} is {data.get('status')}, not done")
        return data["report"]


def _sse(lines) -> Iterator[tuple[str | None, dict]]:
    """(event id, data dict) per Server-Sent Event; comments and retry lines are skipped."""
    event_id: str | None = None
    data: list[str] = []
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
