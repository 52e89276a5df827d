"""The JSON API of problems: the list, and one problem with what the browser needs to run its
public tests."""

from __future__ import annotations

from fastapi import APIRouter, Request

from web.api import app_context
from web.http import drafts
from web.http.errors import ApiError
from web.http.request_input import errors_doc

router = APIRouter(prefix="/api")


# ---------------------------------------------------------------- problems


@router.get("/problems", summary="List the problems", tags=["problems"])
def list_problems(request: Request) -> dict:
    return {"problems": [p.summary() for p in drafts.listing(request)]}


@router.get("/problems/{problem_id}", summary="One problem, with what the browser needs to run "
            "its public tests", tags=["problems"], responses=errors_doc(404))
def get_problem(request: Request, problem_id: str) -> dict:
    """Statements (Markdown, per language), the starter, the public test files, the handbook
    modules a solution may import, and the reference's observations of each public test
    (`public_expectations`: {test name: the reference's entry, as `judge.public_expectations`
    gives it: {outcome, observations: [{label, value}, ...], ...}}, null when unavailable), and
    `grading_python` ("3.11"): the Python that grades Submit, whose grammar Run checks with, and
    `experiment` (the reference's series of the chapter's experiment, for the chart; or null)."""
    from judge.grading.environment import grading_python
    from judge.grading.experiment import problem_experiment
    from judge.grading.reference_cache import public_expectations_or_error

    ctx = app_context(request)
    p = drafts.find(request, problem_id)  # a draft is platform staff's only
    if p is None:
        raise ApiError(404, "unknown_problem", f"there is no problem '{problem_id}'; "
                       "GET /api/problems lists them")
    expectations, why = public_expectations_or_error(p) if p.browser else (None, None)
    return {
        **p.summary(),
        "module": p.module,
        "languages": p.languages(),
        "statement": {lang: p.statement(lang) for lang in p.languages()},
        "starter": p.starter_source,
        "public_tests": p.public_files(),
        "handbook": p.handbook_sources(),
        "handbook_install": list(p.config.handbook.install),  # the page's Run calls these first
        "public_expectations": expectations,
        "expectations_error": why,
        "limits": {**p.limits.model_dump(), "browser_run_timeout_s": ctx.settings.browser_run_timeout_s,
                   "max_code_bytes": ctx.settings.max_code_bytes},
        "version": p.version,
        "grading_python": grading_python(),
        # the chapter's experiment, the reference's series (the page's chart); None without one
        "experiment": problem_experiment(p),
        # hints.toml: Run's report offers those its first failure meets (judge.judging.hints)
        "hints": _hints(p),
        # labels.zh.json: the tests' observation labels in Chinese (English -> Chinese; keys
        # with {name} placeholders stand for f-string labels); the page looks a label up here,
        # then in the table of words, else shows it as it is
        "labels": {"zh": _labels(p)},
    }


def _labels(p) -> dict:
    from judge.problem import ProblemError
    try:
        return p.labels("zh")
    except ProblemError:  # `judge check` names what is wrong; the page shows the English
        return {}


def _hints(p) -> list:
    from judge.problem import ProblemError
    try:
        return p.hints
    except ProblemError:  # `judge check` names what is wrong; the page goes on without hints
        return []
