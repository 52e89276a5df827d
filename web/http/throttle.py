"""In-memory limits on what one client may cost the server: request rates per key, concurrent
event streams, and guesses at a secret. Kept in the server process: the server is one process
(workers on other hosts never take student requests), and a restart forgets at most a minute
of history."""

from __future__ import annotations

from web.services.limits import FailureThrottle, SlidingWindow, StreamSlots


class ClientLimits:
    """The limits of one server, built from its settings."""

    def __init__(self, settings):
        self.submissions_by_address = SlidingWindow(settings.rate_limit_per_address,
                                                    settings.rate_limit_window_s)
        self.streams = StreamSlots(settings.max_streams_per_visitor,
                                   settings.max_streams_per_address)
        self.instructor_guesses = FailureThrottle()
        # Wrong passwords: per account (5 free, then doubling waits), and per address with
        # room for a class behind one address mistyping now and then.
        self.login_by_account = FailureThrottle(free=5)
        self.login_by_address = FailureThrottle(free=50)
        # Wrong join codes, the same way: a code is short enough to type, so a guesser must
        # wait (per account, and per address for one who makes many accounts).
        self.join_by_account = FailureThrottle(free=5)
        self.join_by_address = FailureThrottle(free=50)


def client_address(request) -> str:
    return request.client.host if request.client else "unknown"
