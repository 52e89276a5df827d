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

#if !defined(PJ_ROLE_REFERENCE) && !defined(PJ_ROLE_SUBMISSION)
#error "pj_judge.hpp is built by the judge, which says whose binary this is"
#endif

namespace pj {

struct Failure {
  std::string msg;
};

// What an expected value is in the student's binary: nothing at all.
struct unseen {};

namespace detail {

inline int results_fd() {
  static const int fd = [] {
    const char* s = std::getenv("PJ_RESULTS_FD");
    return s ? std::atoi(s) : -1;
  }();
  return fd;
}

// One whole line per write, retried: a case may die right after, and no stdio buffer is
// involved that its death could lose.
inline void put(const std::string& line) {
  std::string out = line + "\n";
  const char* p = out.data();
  size_t left = out.size();
  while (left > 0) {
    ssize_t n = ::write(results_fd(), p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= size_t(n);
  }
}

inline std::string hex(std::string_view s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() * 2 + 1);
  for (unsigned char c : s) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out.empty() ? "-" : out;
}

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
inline bool& opaque_flag() {
  static bool f = false;
  return f;
}

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
inline std::string bounded(const std::string& s) {
  if (s.size() <= 4096) return s;
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  std::ostringstream os;
  os << s.substr(0, 200) << "... (" << s.size() << " characters, digest " << std::hex << h << ")";
  return os.str();
}

template <class T>
std::string show(const T& v) {
  std::ostringstream os;
  opaque_flag() = false;
  show_into(os, v);
  return bounded(os.str());
}

inline void observe(const char* kind, const std::string& what, const std::string& value) {
  put(std::string("O ") + kind + " " + hex(what) + " " + hex(value));
}

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

}  // namespace detail

inline void require(bool ok, const std::string& what) {
  detail::observe("ok", what, ok ? "true" : "false");
  if (!ok) throw Failure{what};
}

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

inline double env_number(const char* name, int index, double fallback) {
  const char* s = std::getenv(name);
  for (int i = 0; s && *s; ++i) {
    char* end = nullptr;
    double v = std::strtod(s, &end);
    if (i == index) return end != s && v > 0 ? v : fallback;
    s = std::strchr(s, ',');
    if (s) ++s;
  }
  return fallback;
}

inline int& case_count() {
  static int n = 0;
  return n;
}

// The case itself, in a process of its own: nothing it does reaches the next case. At the
// soft limit the kernel sends SIGXCPU, which says "CPU time" whatever getrusage says: under
// steal (a VM on a busy host) the kernel's count runs up to ~15 % ahead of the rusage the
// parent reads, so a SIGKILL at a shared hard limit looked like a crash. Code that catches
// SIGXCPU gains at most the second up to the hard limit, where SIGKILL ends it.
[[noreturn]] inline void in_case(int index, const std::function<void()>& f) {
  double cpu = env_number("PJ_CASE_CPU", index, 10.0);
  rlim_t s = rlim_t(cpu + 0.999);
  struct rlimit rl = {s, s + 1};
  setrlimit(RLIMIT_CPU, &rl);
  std::string end = "done", why;
  try {
    f();
  } catch (const Failure& e) {
    end = "fail";
    why = e.msg;
  } catch (const std::exception& e) {
    end = "exception";
    why = e.what();
  } catch (...) {
    end = "exception";
    why = "an exception that is not a std::exception";
  }
#if defined(PJ_LEAK_CHECK)
  if (end == "done" && __lsan_do_recoverable_leak_check() != 0) end = "leak";
#endif
  put("X " + end + " " + hex(why));
  std::fflush(nullptr);
  _exit(0);
}

inline void wait_case(int index, pid_t pid) {
  double cpu = env_number("PJ_CASE_CPU", index, 10.0);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  double wall = 10 * cpu + 5;  // a net for sleeping; CPU time is the limit
  long sleep_ns = 200000;
  int status = 0;
  struct rusage ru {};
  bool timed_out = false;
  for (;;) {
    pid_t got = wait4(pid, &status, WNOHANG, &ru);
    if (got == pid || (got < 0 && errno != EINTR)) break;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9 > wall && !timed_out) {
      kill(pid, SIGKILL);
      timed_out = true;
    }
    struct timespec d = {0, sleep_ns};
    nanosleep(&d, nullptr);
    sleep_ns = std::min(sleep_ns * 2, 10000000L);
  }
  long us = ru.ru_utime.tv_sec * 1000000L + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1000000L +
            ru.ru_stime.tv_usec;
  std::string how = timed_out ? "wall" : WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                                             : "exit " + std::to_string(WEXITSTATUS(status));
  put("W " + std::to_string(index) + " " + std::to_string(us) + " " + hex(how));
}

}  // namespace detail

inline void run(const char* name, const std::function<void()>& f) {
  int index = detail::case_count()++;
  detail::put("C " + std::to_string(index) + " " + detail::hex(name ? name : ""));
  std::string mark = "\n==PJ-CASE " + std::to_string(index) + "==\n";
  std::fflush(nullptr);
  (void)!::write(2, mark.data(), mark.size());  // the judge files sanitizer reports by case
  pid_t pid = fork();
  if (pid == 0) detail::in_case(index, f);
  if (pid < 0) {
    detail::put("W " + std::to_string(index) + " 0 " + detail::hex("fork failed"));
    return;
  }
  detail::wait_case(index, pid);
}

}  // namespace pj
