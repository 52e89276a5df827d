"""Every API error is JSON: {"error": {"code": "...", "message": "a sentence a person can act on"}}."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from web.services import Refused

log = logging.getLogger(__name__)


class ApiError(Refused):
    """An error a handler raises; the service layer's `Refused` is answered the same way."""


def error_body(code: str, message: str, **extra) -> dict:
    return {"error": {"code": code, "message": message, **extra}}


ERROR_SCHEMA = {
    "description": "An error, as JSON",
    "content": {"application/json": {"schema": {
        "type": "object",
        "properties": {"error": {"type": "object", "properties": {
            "code": {"type": "string"}, "message": {"type": "string"}}}},
    }}},
}


def _wants_html(request: Request) -> bool:
    return (not request.url.path.startswith("/api/")
            and "text/html" in request.headers.get("accept", ""))


def _describe(err: dict) -> str:
    loc = [str(p) for p in err.get("loc", ()) if p not in ("body",)]
    where = ".".join(loc) if loc else "the body"
    kind = err.get("type", "")
    if kind == "missing":
        return f"field '{where}' is required"
    if kind == "json_invalid":
        return "the body is not valid JSON"
    return f"{where}: {err.get('msg', 'invalid')}"


def install_error_handlers(app: FastAPI, render_error_page) -> None:
    @app.exception_handler(Refused)
    async def _api_error(request: Request, exc: Refused):
        if _wants_html(request):
            return render_error_page(request, exc.status, exc.message)
        return JSONResponse(error_body(exc.code, exc.message, **exc.extra),
                            status_code=exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError):
        problems = [_describe(e) for e in exc.errors()]
        return JSONResponse(error_body("invalid_request", "; ".join(problems) or "invalid request",
                                       fields=problems), status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException):
        codes = {404: "not_found", 405: "method_not_allowed", 400: "bad_request",
                 401: "unauthorized", 403: "forbidden"}
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"nothing at {request.url.path}"
        if _wants_html(request):
            return render_error_page(request, exc.status_code, message)
        return JSONResponse(error_body(codes.get(exc.status_code, "http_error"), message),
                            status_code=exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception):
        log.exception("unhandled error on %s", request.url.path)
        return JSONResponse(error_body("internal", "the server failed on this request; "
                                       "it is logged"), status_code=500)
