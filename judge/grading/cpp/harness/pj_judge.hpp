// The judge's C++ test harness (judge/grading/cpp/; this project's own code). A handbook
// test (test.cpp) includes it in place of the handbook's runtime/cpp/judge.hpp and compiles
// unchanged: the names and signatures are the handbook's (namespace pj: Failure, require,
// require_eq, require_throws, run). What differs is who decides a case: here no case decides
// its own verdict. Every helper writes what it observed to the results channel (the
// descriptor in PJ_RESULTS_FD), and the judge compares the records of the binary built with
// the student's file with those of the binary built with the reference solution, outside
// both processes (docs/IMPORTED_GRADING.md, "C++ problems").
//
// Built twice: PJ_ROLE_REFERENCE (the reference's binary: expectations are evaluated and
// must hold) and PJ_ROLE_SUBMISSION (the student's binary: the judge's rewrite of test.cpp
// replaced every expected value by pj::unseen, so none is ever computed there).
//
// Its functions that are no template are only declared here: pj_judge_rt.cpp defines them,
// compiled once (PJ_RUNTIME: for either role) into the object every test binary links
// (build.py's runtime_object), with the printing of the commonest values (PJ_PRECOMPILED
// below), so that a build compiles only the test's code and the student's.
#pragma once
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <functional>
#include <iomanip>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(PJ_LEAK_CHECK)
#include <sanitizer/lsan_interface.h>
#endif

#if !defined(PJ_ROLE_REFERENCE) && !defined(PJ_ROLE_SUBMISSION) && !defined(PJ_RUNTIME)
#error "pj_judge.hpp is built by the judge, which says whose binary this is"
#endif

namespace pj {

struct Failure {
  std::string msg;
};

// What an expected value is in the student's binary: nothing at all.
struct unseen {};

namespace detail {

int results_fd();

// One whole line per write, retried: a case may die right after, and no stdio buffer is
// involved that its death could lose.
void put(const std::string& line);

std::string hex(std::string_view s);

template <class T, class = void>
struct streamable : std::false_type {};
template <class T>
struct streamable<T, std::void_t<decltype(std::declval<std::ostream&>() << std::declval<const T&>())>>
    : std::true_type {};
template <class T, class = void>
struct iterable : std::false_type {};
template <class T>
struct iterable<T, std::void_t<decltype(std::begin(std::declval<const T&>())),
                               decltype(std::end(std::declval<const T&>()))>> : std::true_type {};
template <class T, class = void>
struct unordered : std::false_type {};
template <class T>
struct unordered<T, std::void_t<typename T::hasher>> : std::true_type {};
template <class T, class = void>
struct smart_pointer : std::false_type {};
template <class T>
struct smart_pointer<T, std::void_t<typename T::element_type, decltype(std::declval<const T&>().get())>>
    : std::true_type {};
template <class T>
struct is_pair : std::false_type {};
template <class A, class B>
struct is_pair<std::pair<A, B>> : std::true_type {};
template <class T>
struct is_tuple : std::false_type {};
template <class... A>
struct is_tuple<std::tuple<A...>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

// Whether a value could be printed: an unprintable one is recorded as "opaque", which the
// judge treats as an observation anyone could forge (judge check says so).
bool& opaque_flag();

template <class T>
void show_into(std::ostream& os, const T& v);

template <class C>
void show_elements(std::ostream& os, const C& c) {
  std::vector<std::string> parts;
  for (const auto& x : c) {
    std::ostringstream one;
    show_into(one, x);
    parts.push_back(one.str());
  }
  // the order of an unordered container is the implementation's, not part of its value
  if constexpr (unordered<C>::value) std::sort(parts.begin(), parts.end());
  os << "[";
  for (size_t i = 0; i < parts.size(); ++i) os << (i ? ", " : "") << parts[i];
  os << "]";
}

template <class T>
void show_into(std::ostream& os, const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    os << (v ? "true" : "false");
  } else if constexpr (std::is_floating_point_v<T>) {
    // every bit of the value, and -0 as 0 (they are ==)
    if (v == T(0)) os << "0";
    else os << std::setprecision(std::numeric_limits<T>::max_digits10) << v;
  } else if constexpr (std::is_enum_v<T>) {
    os << +static_cast<std::underlying_type_t<T>>(v);
  } else if constexpr (std::is_pointer_v<T> || std::is_null_pointer_v<T> || smart_pointer<T>::value) {
    // an address differs between the two binaries whatever the code does
    bool null;
    if constexpr (smart_pointer<T>::value) null = v.get() == nullptr;
    else if constexpr (std::is_null_pointer_v<T>) null = true;
    else null = v == nullptr;
    if constexpr (std::is_convertible_v<T, std::string_view>) {
      if (!null) { os << std::quoted(std::string_view(v)); return; }
    }
    os << (null ? "null" : "a pointer");
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    os << std::quoted(std::string_view(v));
  } else if constexpr (std::is_arithmetic_v<T>) {
    os << +v;
  } else if constexpr (is_optional<T>::value) {
    if (v) show_into(os, *v);
    else os << "nullopt";
  } else if constexpr (is_pair<T>::value) {
    os << "(";
    show_into(os, v.first);
    os << ", ";
    show_into(os, v.second);
    os << ")";
  } else if constexpr (is_tuple<T>::value) {
    os << "(";
    std::apply([&](const auto&... x) { size_t i = 0; ((os << (i++ ? ", " : ""), show_into(os, x)), ...); }, v);
    os << ")";
  } else if constexpr (streamable<T>::value) {
    os << v;
  } else if constexpr (iterable<T>::value) {
    show_elements(os, v);
  } else {
    opaque_flag() = true;
    os << "<a value that cannot be printed>";
  }
}

// A long value is recorded as its first characters, its length and a digest: enough to
// compare it and to show where it starts.
std::string bounded(const std::string& s);

template <class T>
std::string show(const T& v) {
  std::ostringstream os;
  opaque_flag() = false;
  show_into(os, v);
  return bounded(os.str());
}

void observe(const char* kind, const std::string& what, const std::string& value);

template <class A>
void observe_value(const std::string& what, const A& got) {
  std::string value = show(got);
  observe(opaque_flag() ? "opaque" : "eq", what, value);
}

// require(A == B) with a constant B, as the judge rewrites it: the value of A is what is
// recorded; the reference's binary also checks it.
template <class A, class B>
bool equals(const A& got, const B& want) {
  observe_value("", got);
  return bool(got == want);
}
template <class A>
bool equals(const A& got, unseen) {
  observe_value("", got);
  return true;
}

// How the values tests check most often are shown: instantiated once, in pj_judge_rt.cpp's
// object, rather than in every build (the same code: these types' printing depends on
// nothing a test or a student's file declares).
#if defined(PJ_RUNTIME)
#define PJ_EXTERN
#else
#define PJ_EXTERN extern
#endif
#define PJ_PRECOMPILED(...)                                                        \
  PJ_EXTERN template std::string show<__VA_ARGS__>(const __VA_ARGS__&);            \
  PJ_EXTERN template void observe_value<__VA_ARGS__>(const std::string&, const __VA_ARGS__&);
PJ_PRECOMPILED(bool)
PJ_PRECOMPILED(int)
PJ_PRECOMPILED(long)
PJ_PRECOMPILED(long long)
PJ_PRECOMPILED(unsigned long)
PJ_PRECOMPILED(double)
PJ_PRECOMPILED(std::string)
PJ_PRECOMPILED(std::vector<int>)
PJ_PRECOMPILED(std::vector<long long>)
PJ_PRECOMPILED(std::vector<std::string>)
#undef PJ_PRECOMPILED
#undef PJ_EXTERN

}  // namespace detail

void require(bool ok, const std::string& what);

template <class A, class B>
void require_eq(const A& got, const B& want, const std::string& what) {
  detail::observe_value(what, got);
  if (!(got == want)) {
    std::ostringstream os;
    os << what << ": expected " << detail::show(want) << ", got " << detail::show(got);
    throw Failure{os.str()};
  }
}

template <class A>
void require_eq(const A& got, unseen, const std::string& what) {
  detail::observe_value(what, got);
}

template <class E, class F>
void require_throws(F&& f, const std::string& what) {
  try {
    f();
  } catch (const E&) {
    detail::observe("throws", what, "the expected exception");
    return;
  } catch (const std::exception& e) {
    detail::observe("throws", what, std::string("another exception: ") + e.what());
    throw Failure{what + ": threw another exception: " + e.what()};
  }
  detail::observe("throws", what, "nothing");
  throw Failure{what + ": threw nothing"};
}

namespace detail {

double env_number(const char* name, int index, double fallback);

int& case_count();

// The case itself, in a process of its own: nothing it does reaches the next case. At the
// soft limit the kernel sends SIGXCPU, which says "CPU time" whatever getrusage says: under
// steal (a VM on a busy host) the kernel's count runs up to ~15 % ahead of the rusage the
// parent reads, so a SIGKILL at a shared hard limit looked like a crash. Code that catches
// SIGXCPU gains at most the second up to the hard limit, where SIGKILL ends it.
[[noreturn]] void in_case(int index, const std::function<void()>& f);

void wait_case(int index, pid_t pid);

}  // namespace detail

void run(const char* name, const std::function<void()>& f);

}  // namespace pj
