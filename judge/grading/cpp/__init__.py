"""C++ problems (the handbook's cpp book, and the CUDA C++ halves of its cuda book): built
and run in the sandbox, judged against the reference's binary (docs/IMPORTED_GRADING.md,
"C++ problems").

    harness/pj_judge.hpp  the test helpers the handbook's test.cpp calls (pj::run, require...)
    harness/pj_judge_rt.cpp  their functions that are no template, compiled once (build)
    prepare   the test file rewritten: expected values out of the student's binary, the
              test's own code out of the student's reach
    screen    what the student's file may not do to the test it is compiled into
    toolchain the compilers and sanitizers this host has (judge doctor)
    build     one binary, compiled in the sandbox, cached per submission and problem version
    execute   one run of a binary in the sandbox; records (the results channel)
    sanitizer a sanitizer's report, at the student's line
    verdicts  each case's verdict, student's records against the reference's
    reference the reference binary's run, cached per problem version
    grade     grade() of a C++ problem
"""

from __future__ import annotations


def grade_native(problem, source, **kw):
    from judge.grading.cpp.grade import grade_native as grade
    return grade(problem, source, **kw)
