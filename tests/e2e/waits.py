"""Waits that name the answer they mean.

A panel keeps the previous Run's or Submit's result (with its `data-done`) until the new one
replaces it, so "wait for `.submit-result[data-done]`" can read the old verdict on a busy machine.
The page stamps each result with its own Run number or submission id; these helpers remember the
stamp that was there before the action and wait for a finished result with a different one.
"""

from __future__ import annotations

_NEWER = """([selector, attr, before, inner]) => {
  const box = document.querySelector(selector);
  return !!box && box.getAttribute(attr) !== before && (!inner || !!box.querySelector(inner));
}"""


def _stamp(page, selector: str, attr: str) -> str | None:
    node = page.query_selector(selector)
    return node.get_attribute(attr) if node else None


def submission_stamp(page) -> str | None:
    return _stamp(page, ".submit-result", "data-submission")


def run_stamp(page) -> str | None:
    return _stamp(page, ".run-result", "data-run")


def wait_for_new_submission(page, before: str | None, timeout: int = 600_000) -> str:
    """Wait for a finished Submit panel of another submission than `before`; its id."""
    page.wait_for_function(_NEWER, arg=[".submit-result[data-done]", "data-submission", before, ""],
                           timeout=timeout)
    return page.get_attribute(".submit-result[data-done]", "data-submission")


def wait_for_new_run(page, before: str | None, timeout: int = 120_000, inner: str = "") -> None:
    """Wait for a finished Run newer than `before` (holding `inner`, e.g. '.run-stopped', if given)."""
    page.wait_for_function(_NEWER, arg=[".run-result[data-done]", "data-run", before, inner],
                           timeout=timeout)


def submit_and_wait(page, timeout: int = 600_000) -> str:
    """Click Submit and wait for that submission's verdict; its id."""
    before = submission_stamp(page)
    page.click("#submit")
    return wait_for_new_submission(page, before, timeout)


def run_and_wait(page, timeout: int = 120_000) -> None:
    """Start a Run with its shortcut (Ctrl+Enter) and wait for its own answer.

    The shortcut does nothing while Run is disabled, and "Python ready" can come before the
    problem's files have arrived (a busy machine), so it waits for Run to be enabled first.
    """
    page.wait_for_selector("#run:not([disabled])", timeout=timeout)
    before = run_stamp(page)
    page.keyboard.press("Control+Enter")
    wait_for_new_run(page, before, timeout)
