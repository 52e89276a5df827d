"""`judge new ID SLUG --lang cpp`: a C++ problem folder in this platform's format (the one
`judge import` writes from the handbook's cpp book, docs/IMPORTED_GRADING.md "C++ problems"),
with a worked example (a running sum) that `judge check` proves as it is: the reference AC,
the starter not, a wrong submission WA at the case its header names.

    <root>/<NNN>-<slug>/  problem.toml (language "cpp", [native] sanitize), statements,
                          starter/user.cpp, reference/solution.cpp (never served),
                          tests/hidden/test.cpp (never served: its example* cases are the
                          public tests), submissions/wrong_answer/empty_gives_zero.cpp
"""

from __future__ import annotations

TOML = '''id = "{id}"
slug = "{slug}"
difficulty = "easy"                 # easy | medium | hard
chapter = ""
tags = []
requires = []
browser = false                     # C++: Run sends the example cases to the server
language = "cpp"
draft = true                        # staff only until `judge check` passes (or publish it)

[title]
en = "{title}"
zh = "{title}"

[submission]
module = "user"                     # the student's file is user.cpp

[native]
sanitize = "address,undefined"      # or "thread" (ThreadSanitizer) for a concurrent problem

[reference]
path = "{reference}"

[limits]
wall_s = 60
cpu_s = 60
memory_mb = 2048
output_kb = 256
time_factor = 4.0
min_test_s = 5.0
'''

STATEMENT_EN = '''# {title}

Write `std::vector<long> running_sum(const std::vector<long>& xs)` in `user.cpp`: it returns
the prefix sums of `xs` (`running_sum({{1, 2, 3}})` is `{{1, 3, 6}}`; an empty vector gives an
empty vector). The tests are compiled with your file under AddressSanitizer and
UndefinedBehaviorSanitizer.
'''

STATEMENT_ZH = '''# {title}

在 `user.cpp` 中实现 `std::vector<long> running_sum(const std::vector<long>& xs)`：返回 `xs`
的前缀和（`running_sum({{1, 2, 3}})` 是 `{{1, 3, 6}}`；空的 vector 返回空的 vector）。测试和你的
文件一起编译，开着 AddressSanitizer 和 UndefinedBehaviorSanitizer。
'''

STARTER = '''#include <vector>

std::vector<long> running_sum(const std::vector<long>& xs) {
  (void)xs;
  return {};  // TODO
}
'''

REFERENCE = '''#include <vector>

std::vector<long> running_sum(const std::vector<long>& xs) {
  std::vector<long> out;
  long total = 0;
  for (long x : xs) out.push_back(total += x);
  return out;
}
'''

# `pj::run("name", ...)` is a case, `example*` ones are public (Run shows them in full); the
# expected value of `require_eq` never reaches the student's binary (prepare.py). Not a format
# string: @SUMS@ is the long case's sums.
TEST = '''#include "judge.hpp"
#include "user.cpp"

#include <vector>

int main() {
  pj::run("example_small", [] {
    pj::require_eq(running_sum({1, 2, 3}), std::vector<long>{1, 3, 6}, "running_sum({1, 2, 3})");
  });
  pj::run("negative_numbers", [] {
    pj::require_eq(running_sum({5, -2, -3}), std::vector<long>{5, 3, 0}, "running_sum({5, -2, -3})");
  });
  pj::run("empty", [] {
    pj::require_eq(running_sum({}).size(), std::size_t(0), "running_sum({}) is empty");
  });
  pj::run("long", [] {
    std::vector<long> xs;
    for (long x = -50; x < 50; x += 3) xs.push_back(x);
    pj::require_eq(running_sum(xs), std::vector<long>{@SUMS@}, "running sum of a long vector");
  });
}
'''

WRONG = '''// expect: WA
// caught-by: hidden/test.cpp::empty
// Forgets that an empty vector has no sums.
#include <vector>

std::vector<long> running_sum(const std::vector<long>& xs) {
  std::vector<long> out;
  long total = 0;
  for (long x : xs) out.push_back(total += x);
  if (out.empty()) out.push_back(0);
  return out;
}
'''


def _long_sums() -> str:
    total, out = 0, []
    for x in range(-50, 50, 3):
        total += x
        out.append(str(total))
    return ", ".join(out)


def files(fields: dict[str, str]) -> dict[str, str]:
    """{path in the problem folder: text}; `fields`: id, slug, title, reference (its path from
    the bank's base)."""
    return {
        "problem.toml": TOML.format(**fields),
        "statement.en.md": STATEMENT_EN.format(**fields),
        "statement.zh.md": STATEMENT_ZH.format(**fields),
        "starter/user.cpp": STARTER,
        "reference/solution.cpp": REFERENCE,
        "tests/hidden/test.cpp": TEST.replace("@SUMS@", _long_sums()),
        "submissions/wrong_answer/empty_gives_zero.cpp": WRONG,
    }
