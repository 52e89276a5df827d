"""HTML pages (Jinja2): problem list, problem page with the editor, submissions, instructor."""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from sqlalchemy import select

from web.accounts import sessions
from web.accounts.service import staff_roles
from web.api.instructor import overview
from web.courses.service import course_staff_sees
from web.courses.standing import due_now
from web.http import drafts
from web.http.edge import MAX_ROW_ID
from web.http.identity import find_visitor, instructor_ok, instructor_token_matches
from web.pages import problem_list as listing_model
from web.pages.markdown import highlight_python, pygments_css, render_markdown
from web.pages.render import pick_lang, quiet_token, render, render_error_page
from web.services.names import display_name
from web.services.page_runs import runs_in_page
from web.services.submissions import iso_time, view
from web.store.assignment_book import latest_books
from web.store.db import LIVE, Submission, Visitor, utcnow
from web.store.gradebook import gradebook, student_cells

router = APIRouter(include_in_schema=False)


def _progress(request: Request) -> dict:
    """The visitor's cells by problem id (attempts, best, latest: web.store.gradebook)."""
    ctx = request.app.state.ctx
    v = find_visitor(ctx.db, quiet_token(request))
    return {} if v is None else student_cells(ctx.db, v.id)


def _solved_or_latest(cell) -> str | None:
    """"AC" once any submission was accepted (a later WA does not take it back), else the
    latest verdict or state."""
    if cell is None:
        return None
    return "AC" if cell.best and cell.best.verdict == "AC" else cell.latest.verdict


@router.get("/", response_class=HTMLResponse)
def problem_list(request: Request):
    f = listing_model.Filters.from_query(request.query_params)
    listing = listing_model.build(drafts.listing(request), _progress(request), f)
    return render(request, "problems.html", listing=listing, f=f,
                  difficulties=listing_model.DIFFICULTIES, statuses=listing_model.STATUSES)


@router.get("/problems")
def problems_index(request: Request):
    """/problems is the problem list (a reader who trims a problem's address lands there)."""
    query = request.url.query
    return RedirectResponse("/" + (f"?{query}" if query else ""), status_code=308)


def _cuda_needs_gpu(p) -> bool:
    """A CUDA C++ problem the CPU emulator cannot grade: only a GPU worker gives it a verdict."""
    from judge.grading.cpp.cuda import needs_gpu_worker
    return needs_gpu_worker(p)


@router.get("/problems/{ref}", response_class=HTMLResponse)
def problem_page(request: Request, ref: str):
    ctx = request.app.state.ctx
    p = drafts.find(request, ref)
    if p is None:
        return render_error_page(request, 404, f"There is no problem '{ref}'.")
    timeout_s = ctx.settings.browser_run_timeout_s
    try:  # ?run_timeout=N: a different limit for Run in this page (tests, slow machines)
        timeout_s = min(600.0, max(1.0, float(request.query_params["run_timeout"])))
    except (KeyError, ValueError):
        pass
    in_page = runs_in_page(p)  # asyncio tests cannot run in the page: the server runs them
    statements = {lang: render_markdown(_without_title(p.statement(lang)))
                  for lang in (p.languages() or ["en"])}
    config = {
        "problem": p.id, "slug": p.slug, "module": p.module, "browser": in_page,
        # the page cannot run these tests (numpy, torch): Run asks the server (not stored)
        "server_run": not in_page,
        "server_run_why": None if in_page else "event loop" if p.browser else "packages",
        "download_name": f"{p.id}-{p.slug}.py", "api": f"/api/problems/{p.id}",
        # the page's Python: its sandbox frame (which holds the worker) and what it may read
        "sandbox": ctx.build.get("sandbox_url"), "snapshot": ctx.build.get("snapshot"),
        "pyodide": ctx.build.get("pyodide_url"),
        "wheels": ctx.build.get("wheels", []),
        "editor_wheels": ctx.build.get("editor_wheels", []), "timeout_s": timeout_s,
        "max_code_bytes": ctx.settings.max_code_bytes, "lang": pick_lang(request),
        # KaTeX, for the statement's and the explanation's math (fetched only if there is any)
        "math_js": ctx.build.get("math_js"),
    }
    status = _solved_or_latest(_progress(request).get(p.id))
    visitor = find_visitor(ctx.db, quiet_token(request))
    now = utcnow()
    due = due_now(ctx.db, visitor.id if visitor else None, p.id, now)
    # The explanation gives the answer away, so it waits for the visitor's own AC.
    explanations = {lang: render_markdown(text) for lang in statements
                    if status == "AC" and (text := p.explanation(lang))}
    return render(request, "problem.html", p=p, statements=statements, config=config,
                  in_page=in_page, cuda_needs_gpu=_cuda_needs_gpu(p),
                  status=status, explanations=explanations, due=due, server_now=iso_time(now),
                  draft=p.config.draft and not drafts.published(ctx, p),
                  chapter_url=chapter_url(p.chapter, pick_lang(request)),
                  explanation_locked=status != "AC" and p.explanation("zh") is not None)


@router.get("/problems/{ref}/explanation")
def explanation_fragment(request: Request, ref: str):
    """The worked explanation's HTML by language, for the page to open right after the
    visitor's AC (it was there only after a reload); refused until the visitor has one."""
    from fastapi.responses import JSONResponse
    p = drafts.find(request, ref[:100])
    if p is None:
        return JSONResponse({"error": {"code": "unknown_problem"}}, status_code=404)
    if _solved_or_latest(_progress(request).get(p.id)) != "AC":
        return JSONResponse({"error": {"code": "not_solved", "message": "the explanation "
                                       "opens once one of your submissions is accepted"}},
                            status_code=403)
    out = {lang: render_markdown(text) for lang in (p.languages() or ["en"])
           if (text := p.explanation(lang))}
    return JSONResponse({"explanations": out}, headers={"Cache-Control": "private, no-store"})


# The handbook's chapter each problem's chapter name stands for (its pages in each language).
_HANDBOOK = "https://github.com/AnranS/ai-infra-handbooks/blob/main/"
CHAPTERS = {"KV cache": {"zh": "llm/docs/inference/kv-cache.md",
                         "en": "llm/docs-en/inference/kv-cache.md"}}


def chapter_url(chapter: str, lang: str) -> str | None:
    pages = CHAPTERS.get(chapter)
    return _HANDBOOK + (pages.get(lang) or pages["en"]) if pages else None


def _without_title(markdown: str) -> str:
    """The page shows the title itself: drop the statement's own leading `# Title` line."""
    lines = markdown.lstrip("\ufeff").splitlines()
    i = next((n for n, line in enumerate(lines) if line.strip()), None)
    if i is not None and lines[i].startswith("# "):
        del lines[i]
    return "\n".join(lines)


@router.get("/problems/{ref}/starter.py", response_class=PlainTextResponse)
def starter_file(request: Request, ref: str):
    p = drafts.find(request, ref)
    if p is None:
        return PlainTextResponse(f"no problem {ref}\n", status_code=404)
    return PlainTextResponse(p.starter_source, headers={
        "Content-Disposition": f'attachment; filename="{p.id}-{p.slug}.py"'})


@router.get("/submissions", response_class=HTMLResponse)
def history_page(request: Request):
    ctx = request.app.state.ctx
    v = find_visitor(ctx.db, quiet_token(request))
    rows = []
    if v is not None:
        with ctx.db.session() as s:
            rows = list(s.scalars(select(Submission).where(Submission.visitor_id == v.id,
                                                           Submission.kind == LIVE)
                                  .order_by(Submission.id.desc()).limit(200)))
    titles = {p.id: p for p in ctx.catalog.list()}
    return render(request, "history.html", rows=rows, problems=titles)


@router.post("/me")
async def set_name_form(request: Request):
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    raw = (form.get("display_name") or [""])[0]
    name = display_name(raw) if raw.strip() else None  # blank: no name (the same rule as PUT)
    ctx = request.app.state.ctx
    from web.http.identity import current_visitor
    v = current_visitor(request)
    with ctx.db.session() as s:
        row = s.get(Visitor, v.id)
        row.display_name = name
        s.commit()
    return RedirectResponse("/submissions", status_code=303)


@router.get("/submissions/{sid}", response_class=HTMLResponse)
def submission_page(request: Request, sid: int):
    if not 1 <= sid <= MAX_ROW_ID:  # a number the database cannot hold is no submission
        return render_error_page(request, 404, f"There is no submission {sid} among yours.")
    ctx = request.app.state.ctx
    with ctx.db.session() as s:
        sub = s.get(Submission, sid)
        v = find_visitor(ctx.db, quiet_token(request))
        mine = v is not None and sub is not None and sub.visitor_id == v.id and \
            (sub.kind or LIVE) == LIVE
        if sub is None or (not mine and not instructor_ok(request) and not (
                (sub.kind or LIVE) == LIVE and course_staff_sees(
                    ctx.db, sessions.request_account(request), sub.visitor_id))):
            return render_error_page(request, 404, f"There is no submission {sid} among yours.")
        data = view(ctx.db, s, sub).model_dump()
        # Staff reading someone's submission are told whose it is.
        student = None if mine else student_name(s, sub.visitor_id)
    p = ctx.catalog.get(data["problem"])
    return render(request, "submission.html", sub=data, p=p, student=student,
                  code_html=highlight_python(data["code"]),
                  data={k: v for k, v in data.items() if k != "code"})


def student_name(s, visitor_id: int) -> str:
    """"Name (username)" of an account's visitor, else the anonymous visitor's name and id."""
    from web.store.accounts import Account
    a = s.scalar(select(Account).where(Account.visitor_id == visitor_id))
    if a is not None:
        return f"{a.display_name} ({a.username})"
    v = s.get(Visitor, visitor_id)
    return f"{v.display_name or ''} #{visitor_id}".strip()


@router.get("/instructor", response_class=HTMLResponse)
def instructor_page(request: Request):
    ctx = request.app.state.ctx
    if not ctx.settings.instructor_token:
        return render_error_page(request, 403, "Instructor access is off on this server: start "
                                 "it with KVPRACTICE_INSTRUCTOR_TOKEN set.")
    if not instructor_ok(request):
        if staff_roles(ctx.db, sessions.request_account(request)) - {"student"}:
            return RedirectResponse("/courses", status_code=303)  # a course's staff, not the site's
        return render(request, "instructor_login.html",
                      wrong=request.query_params.get("wrong") == "1")
    from judge.judging.verdict import NAMES
    from web.services.instructor_view import STATES, RecentFilter
    return render(request, "instructor.html",
                  o=overview(ctx, RecentFilter.from_query(request.query_params)),
                  book=gradebook(ctx.db, [p.id for p in ctx.catalog.list()]),
                  assignment_books=latest_books(ctx.db),
                  verdict_choices=[*NAMES, *STATES])


@router.post("/instructor/check/{ref}")
def instructor_check_form(request: Request, ref: str):
    ctx = request.app.state.ctx
    p = ctx.catalog.get(ref)
    if instructor_ok(request) and p is not None:
        ctx.checks.start(p)
    return RedirectResponse("/instructor", status_code=303)


@router.post("/instructor/publish/{ref}")
def instructor_publish(request: Request, ref: str):
    """Publish a draft before any `judge check` of it passed (the instructor vouches for it)."""
    ctx = request.app.state.ctx
    p = ctx.catalog.get(ref[:100])
    if not instructor_ok(request):
        return RedirectResponse("/instructor", status_code=303)
    if p is None:
        return render_error_page(request, 404, f"There is no problem '{ref}'.")
    account = sessions.request_account(request)
    drafts.publish(ctx, p, by=account.username if account else "instructor token")
    back = str(request.query_params.get("back") or "")
    return RedirectResponse(f"/problems/{p.id}" if back == "problem" else "/instructor",
                            status_code=303)


@router.get("/instructor/regrade/{ref}", response_class=HTMLResponse)
def instructor_regrade_confirm(request: Request, ref: str):
    """Regrading every student is not undone by a click: say what it does, then POST."""
    ctx = request.app.state.ctx
    p = ctx.catalog.get(ref)
    if not instructor_ok(request):
        return RedirectResponse("/instructor", status_code=303)
    if p is None:
        return render_error_page(request, 404, f"There is no problem '{ref}'.")
    return render(request, "confirm.html", action=f"/instructor/regrade/{p.id}",
                  back="/instructor#regrades",
                  question="Regrade every submission of {problems} a gradebook counts (each "
                  "student's best, and each assignment's counted one)? The new results stay "
                  "hidden until approved on the instructor page.",
                  values={"problems": p.id})


@router.post("/instructor/login")
async def instructor_login(request: Request):
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    token = (form.get("token") or [""])[0]
    resp = RedirectResponse("/instructor", status_code=303)
    if token and instructor_token_matches(request, token):
        # An opaque server-side session, never the token itself (a cookie may reach another
        # port of the host); any session the browser had is closed, so none can be fixed on it.
        ctx = request.app.state.ctx
        sessions.close(ctx.db, ctx.settings, request.cookies.get(sessions.cookie_name(ctx.settings)))
        sessions.set_cookie(resp, ctx.settings, sessions.open_session(ctx.db, ctx.settings, None,
                                                                      is_staff=True))
    else:
        resp = RedirectResponse("/instructor?wrong=1", status_code=303)
    return resp


@router.get("/assets/pygments.css")
def pygments_stylesheet() -> Response:
    return Response(pygments_css(), media_type="text/css",
                    headers={"Cache-Control": "public, max-age=3600"})
