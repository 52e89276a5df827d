"""Property-based fuzzing of the whole JSON API from its own OpenAPI schema (schemathesis): no
request, however malformed, gets a 5xx."""

from __future__ import annotations

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings

from e2e.fake_grader import quick
from test_web_api import TOKEN, make_settings
from web.app import create_app

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
