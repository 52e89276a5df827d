"""A problem with its per-test CPU floor lowered, for the tests whose submission spins.

A spinning test holds its run for the test's limit plus the parent's grace, and the limit of a
problem whose reference takes milliseconds a test is its floor (`min_test_s`). The verdict of a
spin does not depend on how long the floor is, so those tests lower it and keep the rest: the
problem's files, so its version, reference cache entry and zygote, stay the problem's own."""

from __future__ import annotations

from judge.problem import Problem


def floor_lowered(problem: Problem, min_test_s: float) -> Problem:
    floor = min(min_test_s, problem.limits.min_test_s)
    limits = problem.config.limits.model_copy(update={"min_test_s": floor})
    return Problem(problem.path, problem.config.model_copy(update={"limits": limits}),
                   problem.handbook_dir)
