"""The first process of the sandbox's pid namespace: a shell that runs the command and waits.

Why not the command itself: the first process of a pid namespace ignores every signal it
has no handler for (SIGXCPU from RLIMIT_CPU, SIGTERM, ...), so Python there would behave
differently. Why not bwrap's own reaper: bwrap's outer process then exits without waiting
for it, leaving a zombie for the host's init to reap, and a zombie still counts against the
sandbox uid's RLIMIT_NPROC (where init is the judge itself, it would never go away). With
``bwrap --as-pid-1`` and this shell, bwrap waits for it, and it exits with the command's
status (128+N when signal N ended it). When it exits, the kernel kills everything else in
the namespace. Its own stderr goes to /dev/null (it would say "Killed" there); the command
gets the original stderr, kept on fd 3 meanwhile.
"""

INIT = ["/bin/sh", "-c", 'exec 3>&2 2>/dev/null; "$@" 2>&3 3>&- & wait $!', "judge-init"]


def wrap(argv: list[str]) -> list[str]:
    return [*INIT, *argv]
