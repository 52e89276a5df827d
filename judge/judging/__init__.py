"""The judging kernel: what decides a test's verdict from what a run recorded, shared by the
server and the page (Pyodide bundles this room whole, so it imports only the standard library,
pytest-free modules of judge.runner, and itself): the child's event log (`child_log`), one test's
verdict (`test_verdict`), observation comparison (`compare`), verdicts (`verdict`), reports
(`report`), scores (`scoring`), bounded JSON (`bounded`), syntax errors by the grading Python's
grammar (`syntax`), time limits (`clock`) and the event names the front end shares (`vocabulary`).
Nothing here runs a process or touches the host's files."""
