"""The student's `judge.py submit`: one submission sent with a personal token, its progress
followed as Server-Sent Events until its verdict. Standard library only, since it travels in
the student's package, where httpx may not be installed (web/client.py is the client of every
other caller).

The server's answers are read as untrusted input: each body and each event line is bounded,
and what is not JSON of the expected shape is an error, never a crash. A dropped stream is
resumed from the last event id (no event lost or repeated); a server that cannot be reached is
`Unreachable`, a refusal `Refused` with the server's own code and message.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from typing import Callable, Iterator

MAX_BODY_BYTES = 16 * 1024 * 1024   # a report is at most a few MB (judge.judging.bounded)
MAX_LINE_BYTES = 16 * 1024 * 1024   # one event's data line holds the whole report at the end
READ_TIMEOUT_S = 60.0               # the stream sends a keep-alive every 15 s
RESUME_FOR_S = 300.0                # how long a lost stream is tried again
USER_AGENT = "kvpractice-judge.py"


class SubmitError(Exception):
    pass


class Unreachable(SubmitError):
    """No answer from the server (offline, wrong address, a restart)."""


class Refused(SubmitError):
    """The server answered with an error: its status, code and message."""

    def __init__(self, status: int, code: str, message: str, retry_after: str | None = None):
        super().__init__(f"{status} {code}: {message}".strip())
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


class SubmitClient:
    def __init__(self, server: str, token: str, lang: str = "en", timeout_s: float = 30.0):
        self.server, self.token = server.rstrip("/"), token
        self.lang, self.timeout_s = lang, timeout_s

    def _request(self, method: str, path: str, body: dict | None = None,
                 accept: str = "application/json", extra: dict | None = None,
                 timeout_s: float | None = None):
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {self.token}", "Accept": accept,
                   "Accept-Language": self.lang, "User-Agent": USER_AGENT, **(extra or {})}
        if data is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.server + path, data=data, headers=headers,
                                     method=method)
        try:
            # the timeout holds for every read too: a stream's keep-alives come well within it
            return urllib.request.urlopen(req, timeout=timeout_s or self.timeout_s)
        except urllib.error.HTTPError as exc:
            raise _refusal(exc) from None
        except (urllib.error.URLError, OSError, socket.timeout) as exc:
            raise Unreachable(f"cannot reach {self.server}: {getattr(exc, 'reason', exc)}") \
                from None

    def _json(self, method: str, path: str, body: dict | None = None) -> dict:
        with self._request(method, path, body) as resp:
            try:
                return _object(_bounded(resp))
            except (OSError, socket.timeout) as exc:
                raise Unreachable(f"{self.server} stopped answering: {exc}") from None

    def whoami(self) -> dict:
        """GET /api/me: the account the token acts for ({"account": username, ...})."""
        return self._json("GET", "/api/me")

    def submit(self, problem: str, code: str) -> dict:
        """POST /api/submissions: {"id", "status", "queue_position", "url", "events"}."""
        created = self._json("POST", "/api/submissions", {"problem": problem, "code": code})
        if not isinstance(created.get("id"), int):
            raise SubmitError(f"{self.server} answered without a submission id")
        return created

    def report(self, sid: int) -> dict:
        data = self._json("GET", f"/api/submissions/{int(sid)}")
        if data.get("status") != "done" or not isinstance(data.get("report"), dict):
            raise SubmitError(f"submission {sid} is {data.get('status')}, not done")
        return data["report"]

    def follow(self, sid: int, on_event: Callable[[dict], None] | None = None,
               resume_for_s: float = RESUME_FOR_S) -> dict:
        """The submission's Report once graded; every event before it goes to `on_event`.
        A stream that drops is resumed from its last event for up to `resume_for_s`."""
        last_id, lost_at = None, None
        while True:
            try:
                for event_id, data in self._events(sid, last_id):
                    last_id, lost_at = event_id or last_id, None
                    if data.get("type") == "done":
                        report = data.get("report")
                        return report if isinstance(report, dict) else self.report(sid)
                    if on_event is not None:
                        on_event(data)
            except (Unreachable, Refused, OSError, socket.timeout) as exc:
                if isinstance(exc, Refused) and exc.status < 500:
                    raise
                lost_at = lost_at or time.monotonic()
                if time.monotonic() - lost_at > resume_for_s:
                    raise Unreachable(f"the connection to {self.server} was lost: {exc}") \
                        from None
                time.sleep(1.0)

    def _events(self, sid: int, last_id: str | None) -> Iterator[tuple[str | None, dict]]:
        extra = {"Last-Event-ID": last_id} if last_id else {}
        with self._request("GET", f"/api/submissions/{int(sid)}/events",
                           accept="text/event-stream", extra=extra,
                           timeout_s=READ_TIMEOUT_S) as resp:
            yield from parse_events(lambda: resp.readline(MAX_LINE_BYTES + 1))


def parse_events(readline: Callable[[], bytes]) -> Iterator[tuple[str | None, dict]]:
    """(event id, data dict) per Server-Sent Event; comments, `retry:` lines and events whose
    data is not a JSON object are skipped; a line over the bound ends the stream."""
    event_id: str | None = None
    data: list[str] = []
    while True:
        raw = readline()
        if not raw:
            return
        if len(raw) > MAX_LINE_BYTES:
            raise SubmitError(f"an event line over {MAX_LINE_BYTES} bytes")
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data:
                try:
                    value = json.loads("\n".join(data))
                except ValueError:
                    value = None
                if isinstance(value, dict):
                    yield event_id, value
            event_id, data = None, []
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif line.startswith("id:"):
            event_id = line[3:].strip()[:20] or None


def _bounded(resp) -> bytes:
    body = resp.read(MAX_BODY_BYTES + 1)
    if len(body) > MAX_BODY_BYTES:
        raise SubmitError(f"an answer over {MAX_BODY_BYTES} bytes")
    return body


def _object(body: bytes) -> dict:
    try:
        value = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise SubmitError(f"not a JSON answer: {body[:200]!r}") from None
    if not isinstance(value, dict):
        raise SubmitError("the answer is not a JSON object")
    return value


def _refusal(exc: urllib.error.HTTPError) -> Refused:
    try:
        err = json.loads(exc.read(64 * 1024).decode("utf-8")).get("error") or {}
    except (OSError, ValueError, AttributeError, UnicodeDecodeError):
        err = {}
    if not isinstance(err, dict):
        err = {}
    message = str(err.get("message") or exc.reason)[:2000]
    return Refused(exc.code, str(err.get("code") or ""), message,
                   exc.headers.get("Retry-After") if exc.headers else None)
