// The page's own words in the visitor's language (the <html lang> the server chose); the
// verdicts' names come from the judge's one table (vocabulary.js, generated).
import { VERDICT_NAMES } from "./vocabulary.js";

const ZH = {
  ...VERDICT_NAMES.zh,
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
  // the pool timeline, the Tests tab, Stop, the experiment chart (issue 12)
  "Where the pools parted": "两个缓存池从哪一步开始不同",
  "The block pool, step by step": "块池的逐步变化",
  "in use": "使用中",
  "free, cached": "空闲（有缓存）",
  "free, empty": "空闲（无内容）",
  block: "块",
  "GPU blocks": "GPU 块",
  "host memory": "主机内存",
  disk: "磁盘",
  "front first": "队首在前",
  "least recent first": "最久未用在前",
  "(empty)": "（空）",
  "(the pool's state is too big to show)": "（缓存池的状态太大，无法显示）",
  "(earlier steps are not shown)": "（更早的步骤未显示）",
  "your code made no such call": "你的代码没有这一步调用",
  "the reference made no such call": "参考答案没有这一步调用",
  step: "步骤",
  "step {i} of {n}": "第 {i} 步，共 {n} 步",
  "previous step": "上一步",
  "next step": "下一步",
  "first difference": "第一个不同之处",
  "Step {i}: the first step where your pool differs from the reference's": "第 {i} 步：你的缓存池第一次与参考答案不同",
  "Step {i}: both pools agree so far": "第 {i} 步：到这里两个缓存池还一致",
  "Step {i}: after the first difference": "第 {i} 步：第一个不同之处之后",
  "Step {i}: the two pools agree at every step shown; the failure is in what the test observed":
    "第 {i} 步：显示的每一步两个缓存池都一致；失败出在测试观察到的值上",
  "time limit exceeded after {s} s": "运行 {s} 秒后超出时间限制",
  "printed output": "程序输出",
  "show the test's code": "查看测试代码",
  Statement: "题面",
  Tests: "测试代码",
  Stop: "停止",
  "Stopped after {s} s: you pressed Stop. Python was restarted.": "{s} 秒后停止：你按了“停止”。Python 已重启。",
  "The public tests Run executes in your browser (the hidden tests are not shown).": "“运行”在你的浏览器中执行的公开测试（隐藏测试不显示）。",
  "The chapter's experiment": "本章的实验",
  "Tokens computed per turn": "每轮计算的 token 数",
  turn: "轮",
  run: "配置",
  reference: "参考答案",
  "your pool": "你的缓存池",
  "the numbers": "具体数值",
  // the page's rough edges 6-12 (issue 12)
  "Connection to the server lost: reconnecting (next try in {s} s)… Your submission is kept; its verdict appears here once the server is back.":
    "与服务器的连接已断开：正在重连（{s} 秒后重试）… 你的提交已保存，服务器恢复后判定会显示在这里。",
  "Code editor": "代码编辑器",
  "Load this code into the editor": "把这份代码载入编辑器",
  "Replace your current draft of this problem with this submission's code?": "用这次提交的代码替换你在这道题上的当前草稿吗？",
};

const lang = (document.documentElement.lang || "en").toLowerCase().startsWith("zh") ? "zh" : "en";

export function tr(text, vars = {}) {
  let out = (lang === "zh" && ZH[text]) || text;
  for (const [k, v] of Object.entries(vars)) out = out.replace(`{${k}}`, v);
  return out;
}
