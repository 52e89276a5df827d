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

    codec.py       values to and from tagged JSON data; handles, both ways
    standins.py    the peer's handles decoded into stand-ins, under the caps (for codec.py)
    exceptions.py  exceptions and exception groups both ways; the peer's exception classes as
                   local ones (for codec.py)
    stdvalues.py, npvalues.py, typeforms.py
                   standard-library values, numpy scalars and dtypes, type annotations by value
    views.py, inplace.py, borrowed.py
                   array views, in-place changes and attribute arrays, as in one process
    remote.py      the local stand-ins for the peer's objects (Remote, methods, enum members,
                   attribute containers)
    peertypes.py, classes.py, metadata.py
                   the submission's classes as real types, what is set on them, and the
                   metadata dunders of stand-ins
    operations.py  what one request does to an object of this side, and what the guard refuses
    served.py      runtime modules the trusted side serves
    endpoint.py    requests, answers, nesting and `await` over one Channel
    streams.py     concurrent requests from the trusted side's threads
"""

from .codec import MAX_HANDLES, MAX_TEXT, ProxyRefused
from .endpoint import Endpoint
from .remote import Remote

__all__ = ["Endpoint", "Remote", "ProxyRefused", "MAX_HANDLES", "MAX_TEXT"]
