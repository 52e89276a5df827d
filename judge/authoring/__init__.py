"""Tools for the people who write problems: `judge check` (a problem proves itself: check), `judge
new` (scaffold), `judge import` of the handbook's problem folders (importer, handbook_format),
mutation testing of a problem's tests (mutation/) and comparing a CPU report with a GPU one
(parity). Builds on judge.grading, judge.problem and judge.judging; no terminal code here."""
