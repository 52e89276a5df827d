"""The HTTP API's routers and what every request passes through: the edge guard (sizes, rates,
tokens: edge, throttle), JSON input (request_input), errors as JSON (errors), who is asking
(identity). Routers: problems, submissions, visitors, instructor, regrade, workers."""


def app_context(request):
    """The application's `AppContext` (web/app.py): settings, database, problem bank, jobs."""
    return request.app.state.ctx
