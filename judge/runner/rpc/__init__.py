"""The call proxy between the trusted test process and the submission's process (imported
problems; docs/IMPORTED_GRADING.md). Each side is an `Endpoint`: objects it hands over stay in
its own process and cross as handles; the peer holds `Remote` stand-ins whose attribute reads,
calls, iteration, len, comparisons and `await` become requests. Requests nest (a call may call
back into the caller before it answers), and `await` runs on both sides' event loops at once, so
coroutine factories handed to the submission run concurrently on the trusted side.

The trusted side is `guarded`: the submission may call what the tests handed it and read or set
their public attributes, and nothing else (no `_` names, no modules, no functions' or classes'
attributes set). Comparing a `Remote` with a plain value never asks the submission: equality is
identity there, order is a TypeError, so an object that says "equal to anything" equals nothing.

    codec.py       values and exceptions to and from tagged JSON data; handles, both ways
    remote.py      the local stand-ins for the peer's objects (Remote, methods, enum members,
                   attribute containers)
    operations.py  what one request does to an object of this side, and what the guard refuses
    endpoint.py    requests, answers, nesting and `await` over one Channel
"""

from .codec import MAX_HANDLES, MAX_TEXT, ProxyRefused
from .endpoint import Endpoint
from .remote import Remote

__all__ = ["Endpoint", "Remote", "ProxyRefused", "MAX_HANDLES", "MAX_TEXT"]
