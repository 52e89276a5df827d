"""The files a first visit restores the page's Python from (issue 19), as the server sends them.

The build's memory snapshot (web/static/vendor/snapshot/, written by make_snapshot.js) is 31 MB
of which most is zeros: it goes out precompressed (8 MB), as Pyodide's wasm does, with the cache
header of the vendor files, and decodes to exactly the file the build wrote. The wasm keeps
application/wasm, which WebAssembly's streaming compile requires.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from web.app import create_app, front_end_build
from web.settings import STATIC_DIR, Settings

from e2e.fake_grader import quick

SNAPSHOTS = STATIC_DIR / "vendor" / "snapshot"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    if not front_end_build()["ok"]:
        pytest.skip("the front end is not built (bash scripts/build_frontend.sh)")
    app = create_app(Settings(data_dir=tmp_path_factory.mktemp("data")), grader=quick, workers=1)
    with TestClient(app) as c:
        yield c


def test_the_builds_snapshot_goes_out_precompressed_and_decodes_to_the_file(client):
    (memory,) = SNAPSHOTS.glob("*.memory")
    files = memory.with_suffix(".files")
    assert files.is_file() and (SNAPSHOTS / (memory.name + ".gz")).is_file()
    for path in (memory, files):
        r = client.get(f"/static/vendor/snapshot/{path.name}", headers={"accept-encoding": "gzip"})
        assert r.status_code == 200
        assert r.headers["content-encoding"] == "gzip"
        assert r.headers["content-type"] == "application/octet-stream"
        assert "max-age=86400" in r.headers["cache-control"]
        assert int(r.headers["content-length"]) < path.stat().st_size
        assert r.content == path.read_bytes()
    plain = client.get(f"/static/vendor/snapshot/{files.name}", headers={"accept-encoding": "identity"})
    assert "content-encoding" not in plain.headers and plain.content == files.read_bytes()


def test_an_unknown_snapshot_is_a_404_and_the_wasm_streams(client):
    # The worker asks for its own name only; another build's answer is "not built", not an error.
    assert client.get("/static/vendor/snapshot/python-000000000000000000000000.memory").status_code == 404
    r = client.get("/static/vendor/pyodide/pyodide.asm.wasm", headers={"accept-encoding": "gzip"})
    assert r.headers["content-type"] == "application/wasm"
    assert r.content[:4] == b"\0asm"


def test_the_page_bundles_go_out_precompressed(client):
    build = front_end_build()
    for url, name in ((build["problem_js"], "problem.js"), (build["worker_url"], "worker.js"),
                      (build["css"], "app.css")):
        r = client.get(url, headers={"accept-encoding": "gzip"})
        assert r.status_code == 200 and r.headers["content-encoding"] == "gzip", url
        assert r.content == (STATIC_DIR / "dist" / name).read_bytes()
    worker = client.get(build["worker_url"], headers={"accept-encoding": "gzip"})
    assert worker.headers["content-type"].startswith("text/javascript")
