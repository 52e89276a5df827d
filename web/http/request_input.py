"""Reading a request's input: JSON bodies parsed with clear 4xx errors, bounded row ids, and
the OpenAPI fragments the routes declare for them."""

from __future__ import annotations

import json
from typing import Annotated, TypeVar

from fastapi import Path, Request
from pydantic import BaseModel, ValidationError

from web.http.edge import MAX_ROW_ID
from web.http.errors import ERROR_SCHEMA, ApiError

Body = TypeVar("Body", bound=BaseModel)

# A row id in a path: bounded, so that no number reaches the database as an overflow.
RowId = Annotated[int, Path(ge=1, le=MAX_ROW_ID)]


def errors_doc(*codes: int) -> dict:
    return {c: ERROR_SCHEMA for c in codes}


async def json_body(request: Request, model: type[Body], limit: int) -> Body:
    """Parse the body ourselves so that size, encoding and JSON errors get clear messages."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json" and not ctype.endswith("+json"):
        raise ApiError(415, "not_json", "send the body as JSON with 'Content-Type: "
                       f"application/json' (got {ctype or 'no content type'})")
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > limit:
        raise ApiError(413, "body_too_large", f"the request body is {length} bytes; the limit "
                       f"is {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise ApiError(413, "body_too_large", f"the request body is over {limit} bytes")
    if not body:
        raise ApiError(422, "invalid_request", "the body is empty; send JSON")
    try:
        text = bytes(body).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(400, "not_utf8", f"the body is not valid UTF-8 (byte {exc.start}); "
                       "send JSON encoded as UTF-8") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ApiError(400, "bad_json", f"the body is not valid JSON: {exc.msg} at line "
                       f"{exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise ApiError(400, "bad_json", "the body's JSON is nested too deeply") from None
    if not isinstance(data, dict):
        raise ApiError(422, "invalid_request", "the body must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        msgs = []
        for e in exc.errors():
            where = ".".join(str(p) for p in e["loc"]) or "body"
            msgs.append(f"field '{where}' is required" if e["type"] == "missing"
                        else f"field '{where}': {e['msg']}")
        raise ApiError(422, "invalid_request", "; ".join(msgs), fields=msgs) from None


def body_doc(model: type[BaseModel]) -> dict:
    return {"requestBody": {"required": True, "content": {
        "application/json": {"schema": model.model_json_schema()}}}}
