"""Where Run runs a problem's public tests: in the page (Pyodide) when the problem says it can
(`browser = true`) and its tests need nothing the page's Python lacks, else on the server as a
practice run (web.api.practice). The page's Python cannot wait on an event loop from inside a
test (Pyodide's loop needs WebAssembly stack switching to block: "WebAssembly stack switching not
supported", even for the reference), so a problem whose public tests or handbook modules use
asyncio or define coroutines is sent to the server, where Submit already grades it."""

from __future__ import annotations

import re

# async def / await / asyncio: a test that drives an event loop to its end from sync code
_NEEDS_LOOP = re.compile(r"^\s*async\s+def\s|\bawait\s|\basyncio\b", re.M)


def needs_event_loop(problem) -> bool:
    texts = [t for name, t in problem.public_files().items() if name.endswith(".py")]
    texts += list(problem.handbook_sources().values())
    return any(_NEEDS_LOOP.search(t) for t in texts)


def runs_in_page(problem) -> bool:
    """Whether the page's Run runs this problem's public tests itself."""
    return bool(problem.browser) and not needs_event_loop(problem)
