"""Configuration of the web platform: one dataclass, defaults that need nothing installed."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
WEB_DIR = Path(__file__).resolve().parent
STATIC_DIR = WEB_DIR / "static"
TEMPLATES_DIR = WEB_DIR / "templates"
BUILD_COMMAND = "bash scripts/build_frontend.sh"


@dataclass
class Settings:
    # Where the SQLite database, the queue's storage and caches live.
    data_dir: Path = field(default_factory=lambda: REPO_ROOT / "data")
    # Any SQLAlchemy URL; None means sqlite:///<data_dir>/web.sqlite3. postgresql://... URLs
    # use the psycopg (3) driver.
    database_url: str | None = None
    # The grading queue: None = Huey's SQLite storage in the data directory (embedded mode);
    # redis://HOST:PORT/N = Huey's priority Redis storage, for workers on other machines.
    queue_url: str | None = None
    problems_dir: Path = field(default_factory=lambda: REPO_ROOT / "problems")
    # The handbook modules (flat files); default <the folder above problems_dir>/reference, the
    # grading core's convention (reference paths in problem.toml are relative to that folder).
    reference_dir: Path | None = None
    # Instructor pages and endpoints are off unless a token is configured.
    instructor_token: str | None = field(
        default_factory=lambda: os.environ.get("KVPRACTICE_INSTRUCTOR_TOKEN") or None)

    # Limits answered with a 4xx JSON error.
    max_code_bytes: int = 64 * 1024
    rate_limit_count: int = 10          # submissions per visitor ...
    rate_limit_window_s: float = 60.0   # ... per this many seconds
    max_queued_per_visitor: int = 3     # queued or running at once
    # Tokens cost nothing to make, so the same limits hold per client address too (generous: a
    # classroom may share one address), and the queue of one problem has a ceiling.
    rate_limit_per_address: int = 60    # submissions per address per rate_limit_window_s
    max_queued_per_address: int = 10   # queued or running at once, from one address
    max_queued_per_problem: int = 500   # students' submissions waiting for one problem
    # Event streams held open at once.
    max_streams_per_visitor: int = 8
    max_streams_per_address: int = 32

    # Job leases: a running job's lease is renewed every heartbeat_s; one not renewed for
    # lease_s is considered dead and re-queued. After max_attempts starts it gets an IE report.
    lease_s: float = 60.0
    heartbeat_s: float = 10.0
    reaper_interval_s: float = 5.0
    max_attempts: int = 3

    # Embedded worker pool (threads in the server process; each grading spawns its own child).
    workers: int = 1
    # Server-Sent Events in distributed mode: how often a stream reads its rows (a second server
    # process on the same database sends no in-process wake-up). Embedded, commits wake it.
    sse_poll_s: float = 0.25

    # Browser-side run limits (the page terminates the worker after this long).
    # 143's public tests: ~1 s in the page (6 s on a loaded box); Stop ends one sooner
    browser_run_timeout_s: float = 15.0

    cookie_secure: bool = False
    # Reverse proxies whose X-Forwarded-For / -Proto this server believes ("10.0.0.5,10.0.0.6",
    # or "*" behind a proxy that is the only way in). None: no proxy headers at all, so the
    # address every per-address limit sees is the connection's own (uvicorn alone would trust
    # 127.0.0.1, and any local process could then claim to be any address).
    forwarded_allow_ips: str | None = None

    # Accounts. The key that signs session cookies: None = a random key kept in
    # <data_dir>/secret_key (made on first start, so `make run` needs nothing configured).
    secret_key: str | None = field(
        default_factory=lambda: os.environ.get("KVPRACTICE_SECRET_KEY") or None)
    session_ttl_s: float = 14 * 24 * 3600   # a session expires this long after sign-in
    # A signed-in student is limited per account, not per address (a class shares one).
    max_queued_per_account: int = 3     # queued or running at once
    rate_limit_per_account: int = 10    # submissions per rate_limit_window_s
    # Optional single sign-on (OpenID Connect): all three set, or it is off.
    oidc_issuer: str | None = field(
        default_factory=lambda: os.environ.get("KVPRACTICE_OIDC_ISSUER") or None)
    oidc_client_id: str | None = field(
        default_factory=lambda: os.environ.get("KVPRACTICE_OIDC_CLIENT_ID") or None)
    oidc_client_secret: str | None = field(
        default_factory=lambda: os.environ.get("KVPRACTICE_OIDC_CLIENT_SECRET") or None)
    # Each request to the provider (discovery, token, keys) must be answered whole within this
    # many seconds and this many bytes: a slow or endless answer holds no request for long.
    oidc_timeout_s: float = 10.0
    oidc_max_bytes: int = 1024 * 1024

    # LTI 1.3 (web/lti): the LMS platforms this tool trusts, a JSON list (or the path of a JSON
    # file) of {"issuer", "client_id", "auth_login_url", "auth_token_url", "key_set_url",
    # "deployment_ids": [...]}; None: LTI is off. Scores go back every lti_sync_s seconds.
    lti_platforms: str | None = field(
        default_factory=lambda: os.environ.get("KVPRACTICE_LTI_PLATFORMS") or None)
    lti_sync_s: float = 30.0
    lti_timeout_s: float = 10.0        # one request to an LMS, answered whole in this long
    lti_max_bytes: int = 1024 * 1024   # and in this many bytes

    # Workers on other machines (`judge worker --server URL`) authenticate with this token
    # (X-Worker-Token); None turns the worker endpoints off.
    worker_token: str | None = field(
        default_factory=lambda: os.environ.get("KVPRACTICE_WORKER_TOKEN") or None)
    # A worker whose last heartbeat is older than this is shown as "not answering" (and does not
    # count as a live GPU worker for `judge parity`). 0: max(3 * heartbeat_s, 30).
    worker_stale_s: float = 0.0

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir)
        self.problems_dir = Path(self.problems_dir)
        self.reference_dir = (Path(self.reference_dir) if self.reference_dir
                              else self.problems_dir.parent / "reference")

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'web.sqlite3'}"

    @property
    def oidc_enabled(self) -> bool:
        return bool(self.oidc_issuer and self.oidc_client_id and self.oidc_client_secret)

    @property
    def distributed(self) -> bool:
        return bool(self.queue_url)

    @property
    def stale_after_s(self) -> float:
        return self.worker_stale_s or max(3 * self.heartbeat_s, 3 * self.reaper_interval_s, 30.0)

    @property
    def huey_path(self) -> Path:
        return self.data_dir / "queue.sqlite3"

    @property
    def cache_dir(self) -> Path:
        return self.data_dir / "cache"
