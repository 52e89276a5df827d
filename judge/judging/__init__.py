"""The judging kernel: what decides a test's verdict from what a run recorded, shared by the
server and the page (Pyodide bundles this room whole, so it imports only the standard library,
pytest-free modules of judge.runner, and itself): the child's event log (`child_log`), the one
record of a suite's run (`run_record`), a test's name (`test_id`), one test's verdict
(`test_verdict`), the per-suite loop that judges each test once (`suite_judge`), observation
comparison (`compare`), verdicts (`verdict`), reports (`report`), scores (`scoring`), bounded
JSON (`bounded`), syntax errors by the grading Python's grammar (`syntax`), time limits (`clock`)
and the words the front end shares: events and failure kinds (`vocabulary`).
Nothing here runs a process or touches the host's files."""
