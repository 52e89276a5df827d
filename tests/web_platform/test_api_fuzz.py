"""Property-based fuzzing of the whole JSON API from its own OpenAPI schema (schemathesis): no
request, however malformed, gets a 5xx."""

from __future__ import annotations

import pytest
import schemathesis

# imported (and rewritten by pytest) at collection, before any test's threads run: pytest's
# ast.parse is outside judge/judging/python_ast.py's lock, and on CPython 3.11 a parse beside
# another thread's raised "AST constructor recursion depth mismatch" here
import schemathesis.specs.openapi.schemas  # noqa: F401
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings

from web.app import create_app

from e2e.fake_grader import quick
from web_platform.test_api import TOKEN, make_settings

WORKER_TOKEN = "worker-secret-token-0123"


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    app = create_app(make_settings(tmp_path_factory.mktemp("fuzz"), worker_token=WORKER_TOKEN,
                                   rate_limit_count=10**6, rate_limit_per_address=10**6,
                                   max_queued_per_visitor=10**6),
                     grader=quick, workers=0)
    with TestClient(app):  # runs the lifespan: the app as it serves
        yield app


def test_no_request_gets_a_5xx(app):
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 15, "the schema lists the API's routes"
    failures = []
    for op in operations:
        @settings(max_examples=25, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=op.as_strategy())
        def fuzz(case):
            # Credentials for every kind of route, so that fuzzing reaches the handlers.
            case.headers = {**(case.headers or {}), "X-Instructor-Token": TOKEN,
                            "X-Worker-Token": WORKER_TOKEN,
                            "Authorization": "Bearer fuzzing-visitor-token-0001"}
            response = case.call()
            if response.status_code >= 500:
                failures.append((case.method, case.formatted_path, response.status_code,
                                 response.text[:300]))
        fuzz()
    assert not failures, failures[:5]


def test_no_page_route_gets_a_5xx(app):
    """The page routes are outside the OpenAPI schema: fuzz their path parameters too (huge
    numbers, negative ones, any text), signed in as a visitor and as the instructor."""
    from urllib.parse import quote

    from hypothesis import strategies as st

    from web.pages.routes import router as pages_router

    # the pages' router is mounted without a prefix: its paths are the app's
    pages = [r for r in pages_router.routes if "GET" in (r.methods or ()) and "{" in r.path]
    assert any(r.path == "/submissions/{sid}" for r in pages), [r.path for r in pages]
    value = st.one_of(st.integers(min_value=-10**30, max_value=10**30).map(str),
                      st.text(min_size=1, max_size=40))
    client = TestClient(app)
    failures = []
    for route in pages:
        names = list(route.param_convertors)

        @settings(max_examples=40, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(values=st.tuples(*[value for _ in names]), staff=st.booleans())
        def fuzz(values, staff):
            path = route.path
            for name, v in zip(names, values):
                path = path.replace("{" + name + "}", quote(v, safe=""))
            headers = {"Accept": "text/html",
                       "Authorization": "Bearer fuzzing-visitor-token-0001"}
            if staff:
                headers["X-Instructor-Token"] = TOKEN
            r = client.get(path, headers=headers, follow_redirects=False)
            if r.status_code >= 500:
                failures.append((path, r.status_code, r.text[:200]))
        fuzz()
    assert not failures, failures[:5]
