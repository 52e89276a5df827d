"""The instructor pages' words in English and Chinese (the student pages' are in web.pages.routes.UI)."""

from __future__ import annotations

INSTRUCTOR_TEXT = {
    "en": {
        "queued": "queued", "running": "running", "done": "done",
        "pending_tasks": "tasks in the queue",
        "core_missing": "The grading core cannot be imported:",
        "workers": "Workers", "queue_kind": "Queue", "host": "host", "worker": "worker",
        "device": "device", "state": "state", "current_job": "current job",
        "jobs_done": "jobs done", "last_seen": "last seen", "seconds_ago": "s ago",
        "remote": "remote", "no_workers": "No worker has registered.",
        "problems": "Problems", "problem": "problem", "loads": "loads",
        "public_tests": "public tests", "browser_expectations": "browser expectations",
        "judge_check": "judge check", "check_running": "running…", "pass": "pass",
        "fail": "fail", "changed_since": "problem changed since", "never_run": "never run",
        "run_check": "run judge check", "regrade_all": "regrade all students",
        "regrades": "Regrades", "regrade": "Regrade", "of_problem": "of problem",
        "graded": "graded", "changed": "changed",
        "old_results_shown": "Students still see their old results.",
        "approve": "approve: show the new results",
        "grading_low_priority": "Grading at low priority; students still see their old results.",
        "discard": "discard", "student": "student", "submission": "submission",
        "before": "before", "after": "after", "change": "change",
        "no_graded_submission": "No student has a graded submission of this problem.",
        "no_regrade": "No regrade yet. `judge regrade PROBLEM` or the buttons above start one.",
        "recent": "Recent submissions", "visitor": "visitor", "verdict": "verdict",
        "attempts": "attempts", "graded_by": "graded by", "created": "created",
        "gradebook": "Gradebook",
        "gradebook_note": "Each cell: the best verdict and score (an AC counts over any later "
                          "failure), the latest one when it differs, and the number of "
                          "submissions. Scores count the hidden tests.",
        "csv": "Download as CSV", "solved": "solved", "best": "best", "latest": "latest",
        "no_students": "No student has submitted yet.",
        "token": "Instructor token", "enter": "Enter", "token_wrong": "The token is wrong.",
    },
    "zh": {
        "queued": "排队中", "running": "评测中", "done": "已完成",
        "pending_tasks": "队列中的任务",
        "core_missing": "无法导入评测核心：",
        "workers": "评测进程", "queue_kind": "队列", "host": "主机", "worker": "进程",
        "device": "设备", "state": "状态", "current_job": "当前任务",
        "jobs_done": "已完成任务", "last_seen": "最近心跳", "seconds_ago": "秒前",
        "remote": "远程", "no_workers": "还没有评测进程注册。",
        "problems": "题目", "problem": "题目", "loads": "可加载",
        "public_tests": "公开测试", "browser_expectations": "浏览器期望值",
        "judge_check": "judge check 检查", "check_running": "运行中…", "pass": "通过",
        "fail": "失败", "changed_since": "此后题目有改动", "never_run": "从未运行",
        "run_check": "运行 judge check", "regrade_all": "重新评测所有学生",
        "regrades": "重新评测", "regrade": "重新评测", "of_problem": "题目",
        "graded": "已评测", "changed": "有变化",
        "old_results_shown": "学生看到的仍是原来的结果。",
        "approve": "批准：公布新结果",
        "grading_low_priority": "正在以低优先级评测；学生看到的仍是原来的结果。",
        "discard": "放弃", "student": "学生", "submission": "提交",
        "before": "之前", "after": "之后", "change": "变化",
        "no_graded_submission": "还没有学生在这道题上有已评测的提交。",
        "no_regrade": "还没有重新评测。可用 `judge regrade PROBLEM` 或上面的按钮发起。",
        "recent": "最近的提交", "visitor": "访客", "verdict": "判定",
        "attempts": "提交次数", "graded_by": "评测者", "created": "创建时间",
        "gradebook": "成绩册",
        "gradebook_note": "每一格：最好的判定和得分（通过之后再失败不影响），与之不同时再列出最近一次，"
                          "以及提交次数。得分只计算隐藏测试。",
        "csv": "下载 CSV", "solved": "已通过", "best": "最好", "latest": "最近",
        "no_students": "还没有学生提交。",
        "token": "教师口令", "enter": "进入", "token_wrong": "口令错误。",
    },
}


def instructor_text(lang: str) -> dict[str, str]:
    return INSTRUCTOR_TEXT.get(lang, INSTRUCTOR_TEXT["en"])
