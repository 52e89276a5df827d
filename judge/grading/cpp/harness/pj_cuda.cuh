// The judge's CUDA C++ test harness (judge/grading/cpp/; this project's own code). A handbook
// test (test.cu) includes it in place of the handbook's runtime/cuda/judge.cuh and compiles
// unchanged, with nvcc on a GPU or with g++ against the judge's emulator (PJ_EMU,
// harness/emu/cuda_runtime.h). The names and signatures are the handbook's (namespace pj:
// randn, to_device, device_empty, to_host, launch_ok, check_close, pass, fail, timeit, perf,
// tier, bandwidth_tier, kEmulator; the CK macro). What differs is who decides a case: no case
// decides its own verdict. Each helper writes what it observed to the results channel (the
// descriptor in PJ_RESULTS_FD), and the judge compares the records of the binary built with
// the student's file with those of the binary built with the reference solution, outside
// both (docs/IMPORTED_GRADING.md, "CUDA C++"). Performance figures are not part of a verdict:
// perf and the tiers say nothing here.
//
// Records, one line each, text fields in hex (judge/grading/cpp/cuda.py reads them):
//   C <index> <case>                  the first record of a case (a case is a name the test
//                                     passes to a helper; a new name starts the next case)
//   O close <case> <values>           check_close: "<rtol> <atol> <n> <bits> <bits> ...": the
//                                     device's output (the reference's build: the expected)
//   O launch <case> ok|<error>        launch_ok
//   O ok <case> true|false            pass / fail
//   X fail <why>                      the reference's build only: its own check failed
#pragma once
#include <cuda_runtime.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#if defined(PJ_EMU) && defined(__x86_64__)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#endif

#if !defined(PJ_ROLE_REFERENCE) && !defined(PJ_ROLE_SUBMISSION)
#error "pj_cuda.cuh is built by the judge, which says whose binary this is"
#endif

namespace pj {

struct unseen {};

#ifdef PJ_EMU
constexpr bool kEmulator = true;
#else
constexpr bool kEmulator = false;
#endif

namespace detail {

inline int results_fd() {
  static const int fd = [] {
    const char* s = std::getenv("PJ_RESULTS_FD");
    return s ? std::atoi(s) : -1;
  }();
  return fd;
}

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

inline std::string hex(const std::string& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out.empty() ? "-" : out;
}

// The case a record belongs to: the name the test passed, a new name a new case.
inline void enter(const char* name) {
  static int index = -1;
  static std::string current;
  std::string n = name ? name : "";
  if (index >= 0 && n == current) return;
  current = n;
  put("C " + std::to_string(++index) + " " + hex(n));
}

inline void observe(const char* kind, const char* name, const std::string& value) {
  enter(name);
  put(std::string("O ") + kind + " " + hex(name ? name : "") + " " + hex(value));
}

inline void own_failure(const std::string& why) {
#ifdef PJ_ROLE_REFERENCE
  put("X fail " + hex(why));
#else
  (void)why;
#endif
}

// Every value of a short output, an evenly spaced sample of a long one (the judge knows
// which: it follows from n alone), each as its 32 bits.
inline std::string encode(const std::vector<float>& v, float rtol, float atol) {
  char head[96];
  std::snprintf(head, sizeof head, "%.9g %.9g %zu", double(rtol), double(atol), v.size());
  std::string out = head;
  size_t stride = v.size() <= 65536 ? 1 : (v.size() + 65535) / 65536;
  char one[12];
  for (size_t i = 0; i < v.size(); i += stride) {
    uint32_t b;
    std::memcpy(&b, &v[i], 4);
    std::snprintf(one, sizeof one, " %08x", b);
    out += one;
  }
  return out;
}

[[noreturn]] inline void setup_error(const char* call, cudaError_t e) {
  observe("launch", "setup", std::string(call) + ": " + cudaGetErrorString(e));
  own_failure(std::string(call) + " failed");
  std::exit(1);
}

}  // namespace detail

inline std::vector<float> randn(size_t n, unsigned seed = 0) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

}  // namespace pj

#define CK(call)                                                  \
  do {                                                            \
    cudaError_t pj_err_ = (call);                                 \
    if (pj_err_ != cudaSuccess) ::pj::detail::setup_error(#call, pj_err_); \
  } while (0)

namespace pj {

template <class T>
T* to_device(const std::vector<T>& h) {
  T* d = nullptr;
  CK(cudaMalloc((void**)&d, h.size() * sizeof(T) + 16));
  CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

// memory as cudaMalloc leaves it, made visible: every byte 0xFF (NaN for a float)
template <class T>
T* device_empty(size_t n) {
  T* d = nullptr;
  CK(cudaMalloc((void**)&d, n * sizeof(T) + 16));
  CK(cudaMemset(d, 0xFF, n * sizeof(T)));
  return d;
}

template <class T>
std::vector<T> to_host(const T* d, size_t n) {
  std::vector<T> h(n);
  CK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

inline bool launch_ok(const char* name) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  detail::observe("launch", name, e == cudaSuccess ? "ok" : cudaGetErrorName(e));
  if (e != cudaSuccess) detail::own_failure(std::string("the kernel failed: ") + cudaGetErrorString(e));
  return e == cudaSuccess;
}

// The student's build: what the device produced is recorded, and the judge compares it with
// the reference's expected values. The expected argument is not in this binary at all.
inline bool check_close(const char* name, const std::vector<float>& got, unseen, float rtol = 1e-5f,
                        float atol = 1e-5f) {
  detail::observe("close", name, detail::encode(got, rtol, atol));
  return true;
}

inline bool check_close(const char* name, const std::vector<float>& got, const std::vector<float>& want,
                        float rtol = 1e-5f, float atol = 1e-5f) {
  detail::observe("close", name, detail::encode(want, rtol, atol));
  bool ok = got.size() == want.size();
  for (size_t i = 0; ok && i < got.size(); ++i) ok = std::fabs(got[i] - want[i]) <= atol + rtol * std::fabs(want[i]);
  if (!ok) detail::own_failure(std::string(name) + ": the reference's output is not the expected one");
  return ok;
}

inline void pass(const char* name) { detail::observe("ok", name, "true"); }
inline void fail(const char* name, const std::string& why) {
  detail::observe("ok", name, "false");
  detail::own_failure(why);
}

// Timing is the GPU's: on the emulator nothing is timed; figures are never part of a verdict.
template <class F>
float timeit(F f, int iters = 20) {
  if (kEmulator) return 0.f;
  f();
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaEventRecord(a);
  for (int i = 0; i < iters; ++i) f();
  cudaEventRecord(b);
  cudaEventSynchronize(b);
  float ms = 0;
  cudaEventElapsedTime(&ms, a, b);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return ms / iters;
}

inline void perf(const char*, float, double, double = 0) {}
inline double measured_bandwidth_gbs() { return 0; }
inline void tier(const char*, double, double, double, double, const char*) {}
inline void bandwidth_tier(const char*, float, double) {}

}  // namespace pj

#if defined(PJ_EMU) && defined(__x86_64__)
namespace pj::detail {

// Before any of the student's code runs (this initializer comes first in the translation
// unit, and the student's file may not declare constructors of its own: cuda.py), the
// emulator's run refuses what would let the student's code run when the test did not call
// it, or change the test's code: threads and processes, timers, signal handlers, new limits
// (SIGXCPU), executable, re-protected or re-placed memory (MAP_FIXED over the read-only GOT),
// opening files (/proc/self/mem writes through any protection), and closing or replacing the
// results channel. So the values the test computes after a call cannot be read by the
// student's code: nothing of it runs but what the test calls.
struct Filter {
  std::vector<sock_filter> code;
  void op(uint16_t c, uint32_t k, uint8_t jt = 0, uint8_t jf = 0) { code.push_back({c, jt, jf, k}); }
  void rule(int nr, const std::vector<sock_filter>& body) {
    op(BPF_LD | BPF_W | BPF_ABS, 0);
    op(BPF_JMP | BPF_JEQ | BPF_K, uint32_t(nr), 0, uint8_t(body.size()));
    code.insert(code.end(), body.begin(), body.end());
  }
};

constexpr uint32_t kDeny = SECCOMP_RET_ERRNO | EPERM;
inline uint32_t arg_lo(int i) { return 16 + 8 * i; }

inline std::vector<sock_filter> always() { return {{BPF_RET | BPF_K, 0, 0, kDeny}}; }
inline std::vector<sock_filter> when_nonzero(int i) {
  return {{BPF_LD | BPF_W | BPF_ABS, 0, 0, arg_lo(i)}, {BPF_JMP | BPF_JEQ | BPF_K, 0, 2, 0},
          {BPF_LD | BPF_W | BPF_ABS, 0, 0, arg_lo(i) + 4}, {BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 0},
          {BPF_RET | BPF_K, 0, 0, kDeny}, {BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW}};
}
// refused when any of the (argument, bits) pairs has one of its bits set
inline std::vector<sock_filter> when_any_bit(std::initializer_list<std::pair<int, uint32_t>> bits) {
  std::vector<sock_filter> out;
  uint8_t left = uint8_t(2 * bits.size());
  for (auto [i, bit] : bits) {
    left = uint8_t(left - 2);
    out.push_back({BPF_LD | BPF_W | BPF_ABS, 0, 0, arg_lo(i)});
    out.push_back({BPF_JMP | BPF_JSET | BPF_K, uint8_t(left + 1), 0, bit});
  }
  out.push_back({BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW});
  out.push_back({BPF_RET | BPF_K, 0, 0, kDeny});
  return out;
}
inline std::vector<sock_filter> when_equal(int i, uint32_t v) {
  return {{BPF_LD | BPF_W | BPF_ABS, 0, 0, arg_lo(i)}, {BPF_JMP | BPF_JEQ | BPF_K, 0, 3, v},
          {BPF_LD | BPF_W | BPF_ABS, 0, 0, arg_lo(i) + 4}, {BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0},
          {BPF_RET | BPF_K, 0, 0, kDeny}, {BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW}};
}

inline bool lock_down() {
  Filter f;
  f.op(BPF_LD | BPF_W | BPF_ABS, 4);  // the outer sandbox's filter refuses other ABIs
  f.op(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
  f.op(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  for (int nr : {SYS_clone, SYS_fork, SYS_vfork, SYS_execve, SYS_execveat, 435 /* clone3 */, SYS_alarm,
                 SYS_setitimer, SYS_timer_create, SYS_setrlimit, SYS_mprotect, SYS_pkey_mprotect,
                 SYS_personality, SYS_shmat, 436 /* close_range */, SYS_open, SYS_openat,
                 437 /* openat2 */, SYS_creat, SYS_remap_file_pages})
    f.rule(nr, always());
  f.rule(SYS_rt_sigaction, when_nonzero(1));
  f.rule(SYS_prlimit64, when_nonzero(2));
  f.rule(SYS_mmap, when_any_bit({{2, PROT_EXEC}, {3, MAP_FIXED | 0x100000 /* MAP_FIXED_NOREPLACE */}}));
  f.rule(SYS_mremap, when_any_bit({{3, 2 /* MREMAP_FIXED */ | 4 /* MREMAP_DONTUNMAP */}}));
  int fd = results_fd();
  if (fd >= 0) {
    f.rule(SYS_close, when_equal(0, uint32_t(fd)));
    f.rule(SYS_dup2, when_equal(1, uint32_t(fd)));
    f.rule(SYS_dup3, when_equal(1, uint32_t(fd)));
  }
  f.op(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  sock_fprog prog{uint16_t(f.code.size()), f.code.data()};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    std::fprintf(stderr, "the emulator's run could not be locked down\n");
    std::_Exit(88);
  }
  return true;
}

static const bool locked_down = lock_down();

}  // namespace pj::detail
#endif
