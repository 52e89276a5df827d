"""Tests of grading on the host: grade(), time limits, hidden-test concealment, warm graders,
imported problems graded whole."""
