"""Grading jobs: the queue (Huey), the job system that feeds grading threads (system), claiming
and grading one job under a lease (runner), the graders that call the grading core (graders),
the worker table, remote workers (remote_worker, remote_backend), regrades and `judge check`
runs from the instructor page (checks)."""
