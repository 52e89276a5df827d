"""Drafts: a problem whose problem.toml says `draft = true` (what `judge new` writes) is seen by
platform staff only, until it proves itself (a passing `judge check`, from the instructor page or
the command line: web.jobs.checks, judge.authoring.proof) or an instructor publishes it (a
ProblemPublication row). So a fresh scaffold, whose reference still raises NotImplementedError,
is never on the public list nor a student's IE. Every request-facing lookup of a problem goes
through `find` or `listing`; graders and workers read the whole bank."""

from __future__ import annotations

from fastapi import Request
from sqlalchemy import select

from web.http.identity import instructor_ok
from web.store.accounts import ProblemPublication


def published(ctx, problem) -> bool:
    if not problem.config.draft:
        return True
    with ctx.db.session() as s:
        if s.get(ProblemPublication, problem.id) is not None:
            return True
    check = ctx.checks.status(problem)
    return bool(check and check.get("state") == "done" and check.get("ok"))


def _staff(request: Request) -> bool:
    try:
        return instructor_ok(request)
    except Exception:  # a throttled instructor-token guess sees what anyone sees
        return False


def can_see(request: Request, problem) -> bool:
    return problem is not None and (published(request.app.state.ctx, problem)
                                    or _staff(request))


def find(request: Request, ref: str):
    """The problem `ref` names if this request may see it, else None (as if there were none:
    a draft's existence is no one else's business)."""
    p = request.app.state.ctx.catalog.get(ref)
    return p if can_see(request, p) else None


def listing(request: Request) -> list:
    ctx = request.app.state.ctx
    problems = ctx.catalog.list()
    if any(p.config.draft for p in problems) and _staff(request):
        return problems
    return [p for p in problems if published(ctx, p)]


def publish(ctx, problem, by: str) -> None:
    with ctx.db.session() as s:
        if s.get(ProblemPublication, problem.id) is None:
            s.add(ProblemPublication(problem_id=problem.id, published_by=by[:64]))
            s.commit()


def published_ids(ctx) -> set[str]:
    with ctx.db.session() as s:
        return set(s.scalars(select(ProblemPublication.problem_id)))
