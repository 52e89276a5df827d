"""The inside half of the warm grader's fork server (docs/SANDBOX.md, section 6): the zygote
that imports Python, pytest and a problem's handbook once inside bubblewrap, then forks once per
suite run and confines each fork (namespaces, mounts, capabilities, seccomp) before the
runner's main runs in it. The host's half is judge/sandbox/forkserver.py; the two share
control.py, the one definition of the run request and of their constants.

    zygote.py    the zygote: its preload, its fork loop, each fork's setup
    control.py   the run request (one typed message) and SETUP_FAILED / SETUP_PREFIX
"""
