"""What the web handlers ask for, without HTTP: the platform's rules on submissions (admission,
storing, the views a client reads), a submission's event stream, practice runs and their limits
(limits: counters kept in this process), display names, the instructor's live view. Handlers in
web/api/ and web/pages/ parse the request (web.http), call in here and shape the answer; this
room imports web.courses, web.store and judge/, never web.http, web.api or web.pages. A rule
broken is raised as `Refused` (status, code, message), which the API answers as its JSON error."""


class Refused(Exception):
    """A request the platform's rules turn down: an HTTP status, a stable code and a sentence a
    person can act on (web.http.errors.ApiError is this, raised by handlers)."""

    def __init__(self, status: int, code: str, message: str, headers: dict | None = None,
                 **extra):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.headers, self.extra = headers or {}, extra
