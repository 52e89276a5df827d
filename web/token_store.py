"""Where `judge.py login` keeps a student's personal tokens: one JSON file in the user's config
folder ({server: token}), readable by the user only (the file 0600 and a folder it makes 0700, written
whole and then renamed, so a crash never leaves half a file). Standard library only: it travels
in the student's package.

    $KVPRACTICE_CREDENTIALS, else $XDG_CONFIG_HOME/kvpractice/tokens.json,
    else ~/.config/kvpractice/tokens.json
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

MAX_FILE_BYTES = 1024 * 1024


def credentials_path() -> Path:
    given = os.environ.get("KVPRACTICE_CREDENTIALS")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base) / "kvpractice" / "tokens.json"


def server_key(url: str) -> str:
    """"https://host:port" of a server URL (its path, query and trailing slash dropped)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{url!r} is not a server address (http://HOST:PORT or https://HOST)")
    return f"{parts.scheme}://{parts.netloc}".lower()


def _read(path: Path) -> dict[str, str]:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            return {}
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)} \
        if isinstance(data, dict) else {}


def load(server: str) -> str | None:
    return _read(credentials_path()).get(server_key(server))


def save(server: str, token: str) -> Path:
    """Keeps `token` for `server`; the file's path."""
    path = credentials_path()
    tokens = _read(path)
    tokens[server_key(server)] = token
    _write(path, tokens)
    return path


def forget(server: str) -> bool:
    path = credentials_path()
    tokens = _read(path)
    if tokens.pop(server_key(server), None) is None:
        return False
    _write(path, tokens)
    return True


def _write(path: Path, tokens: dict[str, str]) -> None:
    if not path.parent.is_dir():  # a folder of our own: only the user may list it
        path.parent.mkdir(parents=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tokens-")  # made 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(tokens, fh)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
