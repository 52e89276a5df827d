"""Nothing the student's code does in its own process decides a C++ case's verdict
(docs/IMPORTED_GRADING.md, "C++ problems"): each way a file could forge a pass in the
handbook's one-process harness is a submission here, and none is accepted. Most start from
the starter (which fails), so a forgery that worked would show as AC.

The problem is tests/fixtures/handbook_cpp/cpp/lru-cache (ours, in the handbook's format)."""

from __future__ import annotations

import struct

import pytest
from cpp_bank import cpp_bank, source

from judge import grade
from judge.grading.cpp import build, toolchain

pytestmark = [pytest.mark.usefixtures("run_cache"),
              pytest.mark.skipif(not toolchain.find().pick("address,undefined"),
                                 reason="no C++ compiler with AddressSanitizer here")]
CASES = ["example_basic", "example_evict", "update_keeps_size", "zero_capacity",
         "random_against_oracle", "secret_sequence", "table_after_mix"]


@pytest.fixture(scope="module")
def lru(tmp_path_factory):
    return cpp_bank(tmp_path_factory)["lru-cache"]


def starter_with(attack: str, before: str = "") -> str:
    return before + source("lru-cache", "starter.cpp") + "\n" + attack


def graded(lru, text: str):
    r = grade(lru, text, reveal_hidden=True)
    return r, {t.name.split("::")[1]: str(t.verdict) for t in r.tests}


def test_printing_case_pass_lines_decides_nothing(lru):
    attack = ('#include <cstdio>\nstatic const int printed = [] { for (const char* n : {'
              + ", ".join(f'"{c}"' for c in CASES) + '}) std::printf("CASE %s PASS\\n", n); '
              'std::fflush(stdout); return 0; }();\n')
    r, v = graded(lru, starter_with(attack))
    assert r.verdict == "WA" and v["example_evict"] == "WA"


FORGED = r'''
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
static std::string hx(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string o;
  for (unsigned char c : s) { o += d[c >> 4]; o += d[c & 15]; }
  return o.empty() ? "-" : o;
}
static void say(int fd, const std::string& l) { std::string x = l + "\n"; (void)!write(fd, x.data(), x.size()); }
// Before main: the records of every case, the public values the statement's examples give,
// a guess for the others, then out before any test runs.
static const int forged = [] {
  const char* names[] = {NAMES};
  std::printf("CASE example_basic PASS\n");
  std::fflush(stdout);
  int fd = std::getenv("PJ_RESULTS_FD") ? std::atoi(std::getenv("PJ_RESULTS_FD")) : 1;
  for (int i = 0; i < 7; ++i) {
    say(fd, "C " + std::to_string(i) + " " + hx(names[i]));
    if (i == 0) {
      say(fd, "O eq " + hx("get(1)") + " " + hx("10"));
      say(fd, "O eq " + hx("get(3), never put") + " " + hx("-1"));
    }
    say(fd, "X done -");
    say(fd, "W " + std::to_string(i) + " 1000 " + hx("exit 0"));
  }
  _exit(0);
  return 0;
}();
'''


def test_a_global_constructor_that_forges_every_record_and_exits_is_not_accepted(lru):
    attack = FORGED.replace("NAMES", ", ".join(f'"{c}"' for c in CASES))
    r, v = graded(lru, starter_with(attack))
    assert r.verdict != "AC"
    # it knew the example's values (they are public): that case it could forge, no other
    assert v["example_basic"] == "AC"
    assert all(v[c] == "WA" for c in CASES[1:]), v


def test_exiting_in_the_middle_of_a_case_is_no_pass(lru):
    text = source("lru-cache").replace("  int get(int key) {\n",
                                       "  int get(int key) {\n    if (key == 2) _exit(0);\n")
    r, v = graded(lru, "#include <unistd.h>\n" + text)
    assert r.verdict == "RE" and v["example_evict"] == "RE" and v["example_basic"] == "AC"


def test_records_written_out_of_turn_make_the_case_wrong(lru):
    text = source("lru-cache").replace(
        "  int get(int key) {\n",
        '  int get(int key) {\n    if (key == 2) { const char* f = std::getenv("PJ_RESULTS_FD");'
         ' if (f) { (void)!write(std::atoi(f), "X done -\\nW 1 9 657869742030\\n", 29); } }\n')
    r, v = graded(lru, "#include <cstdlib>\n#include <unistd.h>\n" + text)
    assert v["example_evict"] == "WA" and r.verdict == "WA"
    failure = r.tests[1].failure
    assert failure.kind == "tampered", failure


# Under a one-process harness (the handbook's judge.hpp) this makes every check pass: the
# starter with it is AC there.
MACROS = """
namespace pj {
template <class E, class F> void require_throws_noop(F&&, const std::string&) {}
}
#define require_eq(...) require(true, "")
#define require(...) require(true, "")
#define require_throws require_throws_noop
"""


def test_a_macro_redefining_the_helpers_does_not_reach_the_tests(lru):
    r, v = graded(lru, starter_with(MACROS, before='#include "pj_judge.hpp"\n'))
    assert r.verdict == "WA" and v["example_evict"] == "WA" and v["table_after_mix"] == "WA"
    assert v["zero_capacity"] == "WA"
    # nor can one read the expected expression's text: it is #undef'd before the test's code
    stringize = ('#include <string>\nstd::string pj_seen;\n'
                 '#define require_eq(got, want, what) require_eq((pj_seen = #want, got), want, what)\n')
    r, v = graded(lru, starter_with(stringize))
    assert r.verdict == "WA" and v["example_evict"] == "WA"


def test_specialising_or_overloading_the_helpers_forges_nothing(lru):
    attack = '''
namespace pj {
template <> void require_eq<int, int>(const int&, const int&, const std::string&) {}
template <> void require_eq<int>(const int&, unseen, const std::string&) {}
inline void require(bool, const char*) {}
}
'''
    # the harness comes first: the file may name pj:: (as the handbook's test order allows)
    r, v = graded(lru, starter_with(attack, before='#include "pj_judge.hpp"\n'))
    assert r.verdict == "WA"
    assert v["example_evict"] == "WA" and v["secret_sequence"] == "WA"
    assert v["table_after_mix"] == "WA" and v["random_against_oracle"] == "WA"


def test_an_operator_that_says_every_vector_is_equal_is_not_asked(lru):
    attack = ("#include <vector>\n"
              "bool operator==(const std::vector<int>&, const std::vector<int>&) { return true; }\n")
    r, v = graded(lru, starter_with(attack))
    assert v["random_against_oracle"] == "WA" and v["secret_sequence"] == "WA"


ORACLE = r'''
#include <cstdint>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>
// The test's own oracle, declared here and defined by the test file after this one: a cache
// that answers every get() by replaying its whole history through it. Under a one-process
// harness (the handbook's) this is AC.
static std::vector<int> simulate(int capacity, const std::vector<std::pair<int, int>>& ops);
class LruCache {
 public:
  explicit LruCache(int capacity) : cap_(capacity) {
    if (capacity <= 0) throw std::invalid_argument("capacity");
  }
  int get(int key) { ops_.push_back({key, -1}); return simulate(cap_, ops_).back(); }
  void put(int key, int value) { ops_.push_back({key, value}); keys_.insert(key); }
  int size() const { return int(keys_.size()) < cap_ ? int(keys_.size()) : cap_; }
 private:
  int cap_;
  std::set<int> keys_;
  std::vector<std::pair<int, int>> ops_;
};
'''


def test_the_tests_own_helpers_cannot_be_called(lru):
    r = grade(lru, ORACLE)
    assert r.verdict == "CE"
    assert "simulate" in r.compile_error["message"], r.compile_error


MEMORY = r'''
#include <cstdio>
#include <cstring>
#include <vector>
// Reads its own executable for the table of answers (knowing its first entries), and answers
// from it: where the expected values are compiled into the program, this passes the case.
static const int* found_table() {
  static std::vector<int> table;
  if (table.empty()) {
    std::FILE* f = std::fopen("/proc/self/exe", "rb");
    std::vector<unsigned char> bin;
    int c;
    while (f && (c = std::fgetc(f)) != EOF) bin.push_back((unsigned char)c);
    if (f) std::fclose(f);
    const int probe[3] = {-1, 581, -1};
    for (size_t i = 0; i + 32 <= bin.size(); i += 4)
      if (std::memcmp(&bin[i], probe, sizeof probe) == 0) {
        table.resize(8);
        std::memcpy(table.data(), &bin[i], 32);
        break;
      }
    if (table.empty()) table.push_back(0);
  }
  return table.size() == 8 ? table.data() : nullptr;
}
'''


def test_the_expected_values_are_not_in_the_students_binary(lru):
    """The rewrite takes every expected value out of the student's build: the table of
    answers is in the reference's binary and nowhere in the student's (so no read of its own
    memory or file can find it)."""
    table = struct.pack("<8i", -1, 581, -1, 607, 568, -1, 594, -1)
    cc = toolchain.find().pick("address,undefined")
    test = lru.native_test_path.read_text(encoding="utf-8")
    ref = build.build(lru, source("lru-cache"), "reference", cc, "address,undefined", test)
    sub = build.build(lru, source("lru-cache"), "submission", cc, "address,undefined", test)
    assert table in ref.binary.read_bytes()
    assert table not in sub.binary.read_bytes()  # (its debug copy stays with the judge)
    # a cache that answers from the table when it finds it: it finds nothing
    cheat = MEMORY + source("lru-cache", "starter.cpp").replace(
        "  int get(int key) {\n",
        "  int get(int key) {\n    if (capacity_ == 4 && found_table() && key >= 0 && key < 8)"
        " return found_table()[key];\n")
    r, v = graded(lru, cheat)
    assert v["table_after_mix"] == "WA"


@pytest.mark.parametrize("attack, why", [
    ("#include __BASE_FILE__\n", "only the standard library's headers"),
    ("#include __FILE__\n", "includes itself"),
    ('extern "C" int __lsan_is_turned_off() { return 1; }\n', "sanitizer's own interface"),
    ('extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }\n',
     "sanitizer's own interface"),
    ("#define CAT(a, b) a##b\nextern \"C\" int CAT(__lsan_is_, turned_off)() { return 1; }\n",
     "sanitizer's own interface"),
    ('__attribute__((no_sanitize("address"))) int peek(const int* p) { return p[4]; }\n',
     "turns the sanitizers off"),
    ('#line 1 "test.cpp"\n', "#line directive"),
    ('# 7 "pj_judge.hpp"\n', "#line directive"),
])
def test_what_the_students_file_may_not_do_is_a_compile_error(lru, attack, why):
    r = grade(lru, attack + source("lru-cache"))
    assert r.verdict == "CE" and why in r.compile_error["message"], r.compile_error
