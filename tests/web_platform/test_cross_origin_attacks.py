"""Issue 28 item 4 (the web's part), as the attack: a page of another origin posts the app's
forms with the victim's cookies (every state-changing route, enumerated from the app's own route
table, so a route added later is covered without anyone remembering it), and a guesser tries
join codes and passwords as fast as the server answers."""

from __future__ import annotations

import re

import pytest
from accounts_support import FORM, make_course, post_form, signup
from fastapi.testclient import TestClient

from web.app import create_app

from e2e.fake_grader import quick
from web_platform.test_api import TOKEN, make_settings

STATE_CHANGING = {"POST", "PUT", "PATCH", "DELETE"}
EVIL = "http://evil.example"
# Sample values for path parameters, by name (anything else: a row id).
SAMPLE = {"ref": "901", "problem_id": "901", "action": "approve"}
# The worker API is refused by its token before any Origin is looked at: also a refusal.
WORKER_REFUSALS = {"workers_disabled", "worker_token_missing"}


@pytest.fixture
def app(tmp_path):
    app = create_app(make_settings(tmp_path), grader=quick, workers=0)
    with TestClient(app):
        yield app


def _flat_routes(app) -> list:
    """Every route with its full path. FastAPI >= 0.16x keeps an included router as one entry
    (its routes resolved through iter_route_contexts); older ones list the routes themselves."""
    try:
        from fastapi.routing import iter_route_contexts
    except ImportError:  # pragma: no cover - older FastAPI
        return list(app.routes)
    return list(iter_route_contexts(app.routes))


def state_changing_routes(app) -> list[tuple[str, str]]:
    """(method, path with sample values) of every route that changes state. A Mount (the
    static files) has no methods and only reads."""
    out = []
    for route in _flat_routes(app):
        methods = getattr(route, "methods", None) or set()
        if not methods or not route.path:
            continue
        path = re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: SAMPLE.get(m.group(1), "1"), route.path)
        out += [(method, path) for method in sorted(methods & STATE_CHANGING)]
    return out


def _forged(c: TestClient, method: str, path: str, headers: dict, content_type: str):
    body = b"username=victim&password=x&code=x&title=x&role=instructor&answer=accept"
    return c.request(method, path, content=body, follow_redirects=False,
                     headers={"Content-Type": content_type, **headers})


def _refused(r, path: str) -> bool:
    if r.status_code not in (401, 403):
        return False
    code = r.json().get("error", {}).get("code")
    return code == "cross_origin" or (path.startswith("/api/workers/") and code in WORKER_REFUSALS)


def test_every_state_changing_route_refuses_a_cross_origin_form_with_a_session(app):
    routes = state_changing_routes(app)
    paths = {p for _, p in routes}
    # the enumeration really sees the app (a table read wrong would pass with nothing in it)
    assert len(routes) > 30 and {"/logout", "/courses/join", "/courses/1/members/1/password",
                                 "/courses/1/invitation", "/api/instructor/regrades"} <= paths
    victim = signup(app, "boss", instructor_token=TOKEN)  # the most a cookie can do: staff
    assert "kvp_session" in victim.cookies
    # what another origin's page can make a browser send: its Origin, "null" (a sandboxed
    # frame, a data: URL), no Origin but its Referer, or neither (an old browser, a privacy
    # setting), each in the three content types a form may use
    forgeries = [({"Origin": EVIL}, "application/x-www-form-urlencoded"),
                 ({"Origin": EVIL}, "multipart/form-data; boundary=x"),
                 ({"Origin": EVIL}, "text/plain"),
                 ({"Origin": "null"}, "application/x-www-form-urlencoded"),
                 ({"Referer": EVIL + "/page"}, "application/x-www-form-urlencoded"),
                 ({}, "application/x-www-form-urlencoded")]
    let_through = [(method, path, headers) for method, path in routes
                   for headers, ctype in forgeries
                   if not _refused(_forged(victim, method, path, headers, ctype), path)]
    assert let_through == []
    assert "boss" in victim.get("/").text  # the forged logout did nothing


def test_a_visitor_cookie_alone_is_refused_from_another_origin_too(app):
    anon = TestClient(app)
    anon.get("/")  # the anonymous visitor cookie
    assert "kvp_visitor" in anon.cookies
    let_through = [(m, p) for m, p in state_changing_routes(app)
                   if not _refused(_forged(anon, m, p, {"Origin": EVIL},
                                           "application/x-www-form-urlencoded"), p)]
    assert let_through == []


def test_guessing_a_join_code_is_throttled(app):
    staff = signup(app, "boss", instructor_token=TOKEN)
    cid, code = make_course(staff)
    guesser = signup(app, "guesser")
    throttle = app.state.ctx.limits.join_by_account
    now = [1000.0]
    throttle.clock = lambda: now[0]
    answers = [post_form(guesser, "/courses/join", code=f"guess{i:04d}").status_code
               for i in range(throttle.free + 3)]
    # Before: 404 for every guess, as fast as the server answered (48 bits, no limit at all).
    assert answers[:throttle.free] == [404] * throttle.free
    assert set(answers[throttle.free:]) == {429}
    r = post_form(guesser, "/courses/join", code=code)
    assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1  # even the right one waits
    zh = guesser.post("/courses/join?lang=zh", content=f"code={code}".encode(), headers=FORM)
    assert zh.status_code == 429 and "加入码错误次数过多" in zh.text
    now[0] += 120
    assert post_form(guesser, "/courses/join", code=code).status_code == 303


def test_guessing_join_codes_from_many_accounts_is_throttled_per_address(app):
    staff = signup(app, "boss", instructor_token=TOKEN)
    make_course(staff)
    by_address = app.state.ctx.limits.join_by_address
    by_address.free = 6  # the real allowance is a class's worth of typos; the rule is the same
    now = [1000.0]
    by_address.clock = lambda: now[0]
    guessers = [signup(app, f"sock{i}") for i in range(4)]
    answers = [post_form(g, "/courses/join", code=f"guess{i}{j}").status_code
               for i, g in enumerate(guessers) for j in range(3)]
    assert answers[:6] == [404] * 6 and set(answers[6:]) == {429}, answers
    # a made-up client address in a header changes nothing (no proxy is configured)
    r = guessers[0].post("/courses/join", content=b"code=zzz", follow_redirects=False,
                         headers={**FORM, "X-Forwarded-For": "203.0.113.9"})
    assert r.status_code == 429


def test_password_spraying_from_one_address_is_throttled(app):
    """Many usernames, one wrong password each: the per-account throttle never trips, the
    per-address one must; a forged X-Forwarded-For is no new address."""
    signup(app, "victim")
    by_address = app.state.ctx.limits.login_by_address
    by_address.free = 8  # the real allowance is a class's worth of typos; the rule is the same
    now = [5000.0]
    by_address.clock = lambda: now[0]
    c = TestClient(app)
    answers = [c.post("/login", content=f"username=user{i}&password=wrong".encode(),
                      headers={**FORM, "X-Forwarded-For": f"198.51.100.{i % 250}"},
                      follow_redirects=False).status_code for i in range(by_address.free + 2)]
    assert answers[:by_address.free] == [401] * by_address.free
    assert set(answers[by_address.free:]) == {429}
    now[0] += 120
    assert post_form(c, "/login", username="victim",
                     password="correct horse battery").status_code == 303


def test_a_username_written_differently_is_the_same_account_to_the_throttle(app):
    signup(app, "erin")
    throttle = app.state.ctx.limits.login_by_account
    now = [5000.0]
    throttle.clock = lambda: now[0]
    c = TestClient(app)
    spellings = ["erin", "ERIN", " Erin ", "eRiN\t", "erin"]
    assert [post_form(c, "/login", username=u, password="wrong").status_code
            for u in spellings] == [401] * throttle.free
    assert post_form(c, "/login", username="Erin", password="correct horse battery"
                     ).status_code == 429
