"""The submission's side of an imported problem's grading (docs/IMPORTED_GRADING.md), inside
the sandbox:

    python -P -s -m judge_runner.proxy.serve --in-fd A --out-fd B [--streams-fds C,D] \
        --module solution --submission /view/sub/solution.py

It imports the student's module and answers the trusted test process's requests (rpc.py) on an
event loop until that process goes away; the requests of the tests' other threads come on the
second channel (`--streams-fds`), each stream served on a thread of its own (proxy/streams.py).
It decides nothing: the first message says whether the module imported (with the error when it
did not), the rest are values and handles.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
import threading

from .. import install_step
from ..errors import describe_import_error
from . import served, shared_tmp, warnfilters
from .endpoint import Endpoint
from .protocol import Kind, check_message
from .wire import NESTED_RECURSION_LIMIT, Channel, WireError

MAX_ERROR_TEXT = 4000
# workers for the tests' threads: each is a thread here, and threads count against the sandbox's
# cap on processes (64)
MAX_STREAMS = 32


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="judge_runner.proxy.serve")
    p.add_argument("--in-fd", type=int, required=True)
    p.add_argument("--out-fd", type=int, required=True)
    p.add_argument("--streams-fds", default=None, help="IN,OUT of the streams' channel")
    p.add_argument("--module", required=True)
    p.add_argument("--submission", required=True)
    args = p.parse_args(argv)
    ch = Channel(args.in_fd, args.out_fd)
    # every call nested across the proxy (a memoized recursion of the test's function, fib(200)
    # in py-retry-memoize) costs several frames here and in the tests' process
    sys.setrecursionlimit(max(sys.getrecursionlimit(), NESTED_RECURSION_LIMIT))
    shared_tmp.share()  # the test's temporary folders are the submission's too
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    install_step.run()  # `[handbook] install` (tritonkit): before the student's module
    # made before the import: the module's own code may use a served module (`@gs.kernel`)
    ep = Endpoint(ch, guarded=False, loop=loop)
    warnfilters.collect(ep)  # the warnings the student's code shows go to the tests
    served.install(ep, served.served_names())
    ch.send({"t": "ready"})
    _until_go(ep, ch)  # time_limit's calibration, before any of the student's code runs
    try:
        module = importlib.import_module(args.module)
    except BaseException as exc:  # noqa: BLE001  the file does not import
        info = describe_import_error(exc, exc.__traceback__, os.path.abspath(args.submission))
        info = {k: (v[:MAX_ERROR_TEXT] if isinstance(v, str) else v) for k, v in info.items()}
        ch.send({"t": "hello", "error": info})
        return 3
    ep.tl.warned = []  # (what the import showed is not a test's: in one process it came first)
    ep.root_getattr = lambda name: getattr(module, name)
    ep.root = module
    ch.send({"t": "hello"})

    def lost(exc: WireError) -> None:
        if threading.get_ident() == ep.main_thread:
            loop.stop()
        else:  # a stream's reader or worker
            loop.call_soon_threadsafe(loop.stop)

    ep.lost = lost
    if args.streams_fds:
        s_in, s_out = (int(x) for x in args.streams_fds.split(","))
        ep.open_streams(Channel(s_in, s_out), MAX_STREAMS).start()
    loop.add_reader(ch.fd_in, ep.on_readable)
    loop.run_forever()
    return 0


def _until_go(ep: Endpoint, ch: Channel) -> None:
    """Answers the trusted side's calibration requests until it says to import the module: what
    they cost is measured while nothing of the submission's runs here."""
    while True:
        m = ch.recv()
        kind = check_message(m, ep.side)
        if kind is Kind.GO:
            return
        if kind is not Kind.REQ or m.get("op") != "ping":
            raise WireError(f"a {kind} message before the module is imported")
        ep.dispatch(m)


if __name__ == "__main__":
    status = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(status)
