"""The JSON API's routers: problems, submissions (+ their event streams), practice runs, visitors,
instructor, regrade, workers. What every request passes through first (the edge, identity,
limits, errors as JSON) is web.http's; what a router asks for is web.services'."""


def app_context(request):
    """The application's `AppContext` (web/app.py): settings, database, problem bank, jobs."""
    return request.app.state.ctx
