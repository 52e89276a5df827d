"""HTML pages (Jinja2): problem list, problem page with the editor, submissions, instructor."""

from __future__ import annotations

from urllib.parse import parse_qs

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from sqlalchemy import select

from judge.environment import grading_python

from web.api.submissions import submission_json
from web.api.instructor import overview
from web.pages.instructor_text import instructor_text
from web.store.db import LIVE, Submission, Visitor
from web.store.gradebook import gradebook, student_cells
from web.api.identity import (INSTRUCTOR_COOKIE, find_visitor, instructor_ok, instructor_token_matches,
                       request_token)
from web.pages.markdown import highlight_python, pygments_css, render_markdown
from web.settings import TEMPLATES_DIR

router = APIRouter(include_in_schema=False)
templates = Jinja2Templates(directory=str(TEMPLATES_DIR))
LANG_COOKIE = "kvp_lang"

UI = {
    "en": {
        "problems": "Problems", "history": "My submissions", "instructor": "Instructor",
        "difficulty": "Difficulty", "chapter": "Chapter", "status": "Your status",
        "title": "Title", "run": "Run", "submit": "Submit", "download": "Download",
        "reset": "Reset to starter", "results": "Results", "statement": "Statement",
        "counts": "The server's verdict is the one that counts: Run executes the public tests "
                  "in your browser (Python 3.14 in Pyodide, no torch); Submit grades the full "
                  "hidden suite on the server (Python {python}). The score counts the hidden "
                  "tests only: the public ones are for practice.",
        "python_loading": "Loading Python in the page…", "python_ready": "Python ready",
        "run_hint": "Ctrl/Cmd+Enter runs the public tests", "verdict": "Verdict",
        "score": "Score", "submitted": "Submitted", "no_submissions": "No submissions yet.",
        "display_name": "Display name", "save": "Save", "code": "Code", "tests": "Tests",
        "not_built": "The editor is not built on this server: run `bash scripts/build_frontend.sh`.",
        "solved": "solved", "tried": "tried", "submission": "Submission",
        "explanation": "Explanation",
        "explanation_locked": "This problem has a worked explanation: it opens here once one "
                              "of your submissions is accepted (AC).",
        "source": "Source", "licence": "Licence", "changes": "Changes",
        "best": "best", "latest": "latest", "attempts": "attempts",
        "load_code": "Load this code into the editor",
        "load_code_hint": "Replaces the problem's draft in this browser with this submission's "
                          "code and opens the problem.",
    },
    "zh": {
        "problems": "题目", "history": "我的提交", "instructor": "教师",
        "difficulty": "难度", "chapter": "章节", "status": "你的状态", "title": "标题",
        "run": "运行", "submit": "提交", "download": "下载", "reset": "恢复初始代码",
        "results": "结果", "statement": "题面",
        "counts": "以服务器的判定为准：“运行”在浏览器里执行公开测试（Pyodide 中的 Python 3.14，"
                  "没有 torch）；“提交”由服务器运行完整的隐藏测试（Python {python}）。"
                  "得分只计算隐藏测试：公开测试用于练习。",
        "python_loading": "正在页面中加载 Python…", "python_ready": "Python 已就绪",
        "run_hint": "Ctrl/Cmd+Enter 运行公开测试", "verdict": "判定", "score": "得分",
        "submitted": "提交时间", "no_submissions": "还没有提交。", "display_name": "显示名称",
        "save": "保存", "code": "代码", "tests": "测试",
        "not_built": "本服务器尚未构建编辑器：请运行 `bash scripts/build_frontend.sh`。",
        "solved": "已通过", "tried": "已尝试", "submission": "提交",
        "explanation": "题解",
        "explanation_locked": "本题附有题解：你的提交通过（AC）之后会显示在这里。",
        "source": "来源", "licence": "许可", "changes": "改动",
        "best": "最好", "latest": "最近", "attempts": "提交次数",
        "load_code": "把这份代码载入编辑器",
        "load_code_hint": "用这次提交的代码替换本浏览器中该题的草稿，并打开该题。",
    },
}


def pick_lang(request: Request) -> str:
    q = request.query_params.get("lang")
    if q in UI:
        return q
    c = request.cookies.get(LANG_COOKIE)
    if c in UI:
        return c
    return "zh" if request.headers.get("accept-language", "").lower().startswith("zh") else "en"


def render(request: Request, name: str, http_status: int = 200, **ctx) -> HTMLResponse:
    lang = pick_lang(request)
    app_ctx = request.app.state.ctx
    visitor = find_visitor(app_ctx.db, _token(request))
    # The grading Python is named where it is decided (judge.environment), not in the text.
    t = dict(UI[lang], counts=UI[lang]["counts"].format(python=grading_python()))
    resp = templates.TemplateResponse(request, name, {
        "lang": lang, "t": t, "visitor": visitor, "build": app_ctx.build,
        "instructor_enabled": bool(app_ctx.settings.instructor_token), **ctx},
        status_code=http_status)
    if request.query_params.get("lang") in UI:
        resp.set_cookie(LANG_COOKIE, lang, max_age=31536000, samesite="lax")
    return resp


def render_error_page(request: Request, status: int, message: str) -> HTMLResponse:
    return render(request, "error.html", http_status=status, status_code=status, message=message)


def _token(request: Request):
    try:
        return request_token(request)
    except Exception:
        return None


def _progress(request: Request) -> dict:
    """The visitor's cells by problem id (attempts, best, latest: web.store.gradebook)."""
    ctx = request.app.state.ctx
    v = find_visitor(ctx.db, _token(request))
    return {} if v is None else student_cells(ctx.db, v.id)


def _solved_or_latest(cell) -> str | None:
    """"AC" once any submission was accepted (a later WA does not take it back), else the
    latest verdict or state."""
    if cell is None:
        return None
    return "AC" if cell.best and cell.best.verdict == "AC" else cell.latest.verdict


@router.get("/", response_class=HTMLResponse)
def problem_list(request: Request):
    ctx = request.app.state.ctx
    return render(request, "problems.html", problems=ctx.catalog.list(),
                  progress=_progress(request))


@router.get("/problems/{ref}", response_class=HTMLResponse)
def problem_page(request: Request, ref: str):
    ctx = request.app.state.ctx
    p = ctx.catalog.get(ref)
    if p is None:
        return render_error_page(request, 404, f"There is no problem '{ref}'.")
    timeout_s = ctx.settings.browser_run_timeout_s
    try:  # ?run_timeout=N: a different limit for Run in this page (tests, slow machines)
        timeout_s = min(600.0, max(1.0, float(request.query_params["run_timeout"])))
    except (KeyError, ValueError):
        pass
    statements = {lang: render_markdown(_without_title(p.statement(lang)))
                  for lang in (p.languages() or ["en"])}
    config = {
        "problem": p.id, "slug": p.slug, "module": p.module, "browser": p.browser,
        "download_name": f"{p.id}-{p.slug}.py", "api": f"/api/problems/{p.id}",
        "worker": ctx.build.get("worker_url"), "pyodide": ctx.build.get("pyodide_url"),
        "wheels": ctx.build.get("wheels", []),
        "editor_wheels": ctx.build.get("editor_wheels", []), "timeout_s": timeout_s,
        "max_code_bytes": ctx.settings.max_code_bytes, "lang": pick_lang(request),
    }
    status = _solved_or_latest(_progress(request).get(p.id))
    # The explanation gives the answer away, so it waits for the visitor's own AC.
    explanations = {lang: render_markdown(text) for lang in statements
                    if status == "AC" and (text := p.explanation(lang))}
    return render(request, "problem.html", p=p, statements=statements, config=config,
                  status=status, explanations=explanations,
                  explanation_locked=status != "AC" and p.explanation("zh") is not None)


def _without_title(markdown: str) -> str:
    """The page shows the title itself: drop the statement's own leading `# Title` line."""
    lines = markdown.lstrip("\ufeff").splitlines()
    i = next((n for n, line in enumerate(lines) if line.strip()), None)
    if i is not None and lines[i].startswith("# "):
        del lines[i]
    return "\n".join(lines)


@router.get("/problems/{ref}/starter.py", response_class=PlainTextResponse)
def starter_file(request: Request, ref: str):
    p = request.app.state.ctx.catalog.get(ref)
    if p is None:
        return PlainTextResponse(f"no problem {ref}\n", status_code=404)
    return PlainTextResponse(p.starter_source, headers={
        "Content-Disposition": f'attachment; filename="{p.id}-{p.slug}.py"'})


@router.get("/submissions", response_class=HTMLResponse)
def history_page(request: Request):
    ctx = request.app.state.ctx
    v = find_visitor(ctx.db, _token(request))
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
    name = " ".join((form.get("display_name") or [""])[0].split())[:40]
    ctx = request.app.state.ctx
    from web.api.identity import current_visitor
    v = current_visitor(request)
    with ctx.db.session() as s:
        row = s.get(Visitor, v.id)
        row.display_name = name or None
        s.commit()
    return RedirectResponse("/submissions", status_code=303)


@router.get("/submissions/{sid}", response_class=HTMLResponse)
def submission_page(request: Request, sid: int):
    ctx = request.app.state.ctx
    with ctx.db.session() as s:
        sub = s.get(Submission, sid)
        v = find_visitor(ctx.db, _token(request))
        mine = v is not None and sub is not None and sub.visitor_id == v.id and \
            (sub.kind or LIVE) == LIVE
        if sub is None or (not mine and not instructor_ok(request)):
            return render_error_page(request, 404, f"There is no submission {sid} among yours.")
        data = submission_json(ctx, s, sub)
    p = ctx.catalog.get(data["problem"])
    return render(request, "submission.html", sub=data, p=p,
                  code_html=highlight_python(data["code"]),
                  data={k: v for k, v in data.items() if k != "code"})


@router.get("/instructor", response_class=HTMLResponse)
def instructor_page(request: Request):
    ctx = request.app.state.ctx
    if not ctx.settings.instructor_token:
        return render_error_page(request, 403, "Instructor access is off on this server: start "
                                 "it with KVPRACTICE_INSTRUCTOR_TOKEN set.")
    if not instructor_ok(request):
        return render(request, "instructor_login.html", it=instructor_text(pick_lang(request)),
                      wrong=request.query_params.get("wrong") == "1")
    return render(request, "instructor.html", o=overview(ctx), it=instructor_text(pick_lang(request)),
                  book=gradebook(ctx.db, [p.id for p in ctx.catalog.list()]))


@router.post("/instructor/check/{ref}")
def instructor_check_form(request: Request, ref: str):
    ctx = request.app.state.ctx
    p = ctx.catalog.get(ref)
    if instructor_ok(request) and p is not None:
        ctx.checks.start(p)
    return RedirectResponse("/instructor", status_code=303)


@router.post("/instructor/login")
async def instructor_login(request: Request):
    form = parse_qs((await request.body()).decode("utf-8", "replace"))
    token = (form.get("token") or [""])[0]
    resp = RedirectResponse("/instructor", status_code=303)
    if token and instructor_token_matches(request, token):
        resp.set_cookie(INSTRUCTOR_COOKIE, token, httponly=True, samesite="strict",
                        secure=request.app.state.ctx.settings.cookie_secure)
    else:
        resp = RedirectResponse("/instructor?wrong=1", status_code=303)
    return resp


@router.get("/assets/pygments.css")
def pygments_stylesheet() -> Response:
    return Response(pygments_css(), media_type="text/css",
                    headers={"Cache-Control": "public, max-age=3600"})
