"""Single sign-on in Chromium: the sign-in page's "school account" button goes to a local
OpenID Connect provider (tests/web_platform/test_oidc.py's, on loopback, with its own RSA key), which sends the
browser back signed in as a new account; signing out and in again goes through the provider
once more (that it finds the same account by `sub` is asserted in tests/web_platform/test_oidc.py)."""

from __future__ import annotations

import pytest

from e2e.test_class_flow import serve
from web_platform.test_oidc import CLIENT_ID, CLIENT_SECRET, Provider

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def provider():
    p = Provider()
    p.thread.start()
    yield p
    p.httpd.shutdown()


@pytest.fixture(scope="module")
def server(tmp_path_factory, provider):
    yield from serve(tmp_path_factory.mktemp("oidc-browser"), KVPRACTICE_OIDC_ISSUER=provider.issuer,
                     KVPRACTICE_OIDC_CLIENT_ID=CLIENT_ID,
                     KVPRACTICE_OIDC_CLIENT_SECRET=CLIENT_SECRET)


def test_sign_in_with_the_school_account(server, browser, provider, class_shots):
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(f"{server}/login?lang=en")
    with page.expect_navigation(url=f"{server}/courses"):
        page.click("#oidc-login")
    assert "Li Wei" in page.inner_text("header")
    page.screenshot(path=str(class_shots / "oidc-signed-in.png"), full_page=True)
    assert [c["grant_type"] for c in provider.token_calls] == ["authorization_code"]
    # signed out and in again: a second trip through the provider, a second code redeemed
    with page.expect_navigation():
        page.click("form[action='/logout'] button")
    assert "Li Wei" not in page.inner_text("header")
    page.goto(f"{server}/login?lang=en")
    with page.expect_navigation(url=f"{server}/courses"):
        page.click("#oidc-login")
    assert "Li Wei" in page.inner_text("header") and len(provider.token_calls) == 2
    ctx.close()
