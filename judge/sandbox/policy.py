"""Whose code this host may grade: anyone's only where the sandbox has a private filesystem view.

Without it (no bubblewrap) a submission runs with the whole host readable to its uid (the
problems' hidden tests and references, a worker's token file, other submissions in flight),
and the other layers do not make up for that. Grading one's own code goes on regardless.
"""

from __future__ import annotations


def weak_sandbox_refusal(command: str, trust_flag: str) -> str | None:
    """Why `judge <command>` must not grade other people's code here, or None when it may;
    `trust_flag` is the option that says the code is trusted."""
    from judge import sandbox  # looked up at call time: tests give it a probe of their own

    probe = sandbox.probe_layers()
    if probe.layers.get("private_fs"):
        return None
    missing = ", ".join(probe.missing) or "private_fs"
    return (f"judge {command}: refusing to grade submissions here: the sandbox has no private "
            f"filesystem view ({probe.details.get('bwrap') or probe.details.get('private_fs')})."
            f"\n  Missing layers: {missing}.\n  A submission would see every file its uid "
            "can read on this host: the hidden tests, the references, the worker's token, "
            "other submissions.\n  Install bubblewrap (apt-get install bubblewrap; as root "
            "it also gets a uid of its own) and check with `judge doctor`.\n  To grade only "
            f"code you trust (your own, the reference), pass {trust_flag}. Local "
            "practice (`judge grade`, `practice/judge.py test`) works without it.")
