"""Grading on the host: `grade()` (grader) runs a problem's suites against a submission in the
sandbox (suite_run), in a sealed temporary folder (workdir), compares each test with the
reference's run (reference_cache) through judge.judging, and keeps warm graders for workers
(warm_grader). Also the chapter's experiment and the provenance of a report (environment).
Imports judge.sandbox, judge.problem and judge.judging; never judge.cli, judge.authoring or web."""
