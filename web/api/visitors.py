"""The JSON API of the visitor: a token for an API client, and who you are (a display name)."""

from __future__ import annotations

import anyio
from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from web.api import app_context
from web.http.identity import current_visitor, get_or_create_visitor, new_token, request_account
from web.http.request_input import body_doc, errors_doc, json_body
from web.services.names import display_name
from web.store.db import Visitor

router = APIRouter(prefix="/api")


class MeIn(BaseModel):
    display_name: str = Field(min_length=1, max_length=40)


# ---------------------------------------------------------------- the visitor


@router.post("/visitors", status_code=201, summary="A new visitor token for an API client",
             tags=["visitors"])
def new_visitor(request: Request) -> dict:
    """Send it back as `Authorization: Bearer <token>`. Keep it: it is the only key to the
    submissions made with it."""
    token = new_token()
    v = get_or_create_visitor(app_context(request).db, token)
    return {"token": token, "visitor_id": v.id}


@router.get("/me", summary="The current visitor", tags=["visitors"])
def get_me(request: Request) -> dict:
    v = current_visitor(request, create=False)
    account = request_account(request)  # `judge.py login` checks its token here
    name = account.username if account is not None else None
    if v is None:
        return {"visitor_id": None, "display_name": None, "account": name}
    return {"visitor_id": v.id, "display_name": v.display_name, "account": name}


@router.put("/me", summary="Set your display name", tags=["visitors"],
            openapi_extra=body_doc(MeIn), responses=errors_doc(400, 401, 422))
async def put_me(request: Request) -> dict:
    ctx = app_context(request)
    body = await json_body(request, MeIn, limit=4096)
    name = display_name(body.display_name)
    v = await anyio.to_thread.run_sync(current_visitor, request)

    def save():
        with ctx.db.session() as s:
            row = s.get(Visitor, v.id)
            row.display_name = name
            s.commit()
    await anyio.to_thread.run_sync(save)
    return {"visitor_id": v.id, "display_name": name}
