"""The judge's runner: the code that runs INSIDE the sandbox.

It is copied into each sandbox view as the package ``judge_runner`` and started with
``python -P -s -m judge_runner ...``. It is self-contained on purpose: it imports only the
standard library and pytest, never the rest of ``judge``, and all of its modules use relative
imports so they work under either package name.

It writes plain JSON lines to a pipe the judge passes, or to a results file when run by hand
(see ``events.py`` for the vocabulary). The parent trusts none of it beyond "this is what the
child said", in the order the runner writes it: expected values never enter the child.
"""

# 2: time limits are CPU seconds; cpu_s in imported/test_finished
# 3: lines go through a pipe (--results-fd) and count only in the runner's order
# 4: `trace` events (a pool's calls and states, public tests only)
PROTOCOL_VERSION = 4
