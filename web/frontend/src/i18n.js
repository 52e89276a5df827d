// The page's own words in the visitor's language (the <html lang> the server chose).
const ZH = {
  AC: "通过",
  WA: "答案错误",
  RE: "运行错误",
  TLE: "超出时间限制",
  MLE: "超出内存限制",
  OLE: "输出超限",
  CE: "编译错误",
  IE: "评测内部错误（评测系统的问题）",
  skipped: "浏览器中跳过",
  unsupported: "无法在浏览器中运行",
  "expected (reference)": "期望（参考答案）",
  "got (your code)": "实际（你的代码）",
  "Observation: ": "观察项：",
  "First failure": "第一个失败",
  "The file does not import": "文件无法导入",
  score: "得分",
  "in your browser (public tests)": "在你的浏览器中（公开测试）",
  "server verdict": "服务器判定",
  verdict: "判定",
  test: "测试",
  time: "用时",
  "queued, position": "排队中，位置",
  "grading…": "评测中…",
  "running the {suite} tests…": "正在运行{suite}测试…",
  public: "公开",
  hidden: "隐藏",
  "done:": "完成：",
  "the worker stopped; queued again": "评测进程中断，已重新排队",
  "Running the public tests in your browser…": "正在浏览器中运行公开测试…",
  "Python ready ({s} s after the page opened)": "Python 已就绪（页面打开后 {s} 秒）",
  " · completion ready": " · 补全已就绪",
  "Stopped after {s} s: the code did not finish (an endless loop?). Python was restarted.":
    "{s} 秒后停止：代码没有结束（死循环？）。Python 已重启。",
  Submission: "提交",
  " · the server's verdict counts": " · 以服务器的判定为准",
  "pytest output": "pytest 输出",
};

const lang = (document.documentElement.lang || "en").toLowerCase().startsWith("zh") ? "zh" : "en";

export function tr(text, vars = {}) {
  let out = (lang === "zh" && ZH[text]) || text;
  for (const [k, v] of Object.entries(vars)) out = out.replace(`{${k}}`, v);
  return out;
}
