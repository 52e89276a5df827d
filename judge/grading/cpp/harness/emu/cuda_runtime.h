// The judge's CUDA-on-CPU emulator (this project's own code): what `#include <cuda_runtime.h>`
// finds when a CUDA C++ problem is graded on a worker without a GPU. It checks a kernel's
// logic, never its speed: every CUDA thread of a block is a ucontext fiber on the one OS
// thread, the blocks of a grid run one after another, and __syncthreads(), __syncwarp() and
// the warp shuffles are real barriers (a thread waits until every live thread of its block,
// or warp, has reached one). A barrier that some threads never reach is a deadlock: the run
// ends with exit code PJ_EMU_DEADLOCK and says so on stderr. Execution is sequential, so a
// race between threads is not found. Kernel launches are written `k<<<g, b>>>(args)` in CUDA;
// the judge rewrites them (judge/grading/cpp/cuda.py) to `::pjemu::launcher(k, g, b)(args)`
// and `extern __shared__ T s[];` to a pointer to the launch's dynamic shared memory.
#pragma once
#include <math.h>
#include <ucontext.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>
#include <vector>

#define PJ_EMU_DEADLOCK 87
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) alignas(n)
#define __constant__
#define __managed__
// one copy per launch site, as a block's shared memory is one copy per block (blocks run
// one after another, so they never hold it at the same time)
#define __shared__ static

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
using uint3 = dim3;
struct float2 { float x, y; };
struct float3 { float x, y, z; };
struct float4 { float x, y, z, w; };
struct int2 { int x, y; };
struct int4 { int x, y, z, w; };
struct uint4 { unsigned x, y, z, w; };
struct double2 { double x, y; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float3 make_float3(float x, float y, float z) { return {x, y, z}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int2 make_int2(int x, int y) { return {x, y}; }

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
};
enum cudaMemcpyKind {
  cudaMemcpyHostToHost,
  cudaMemcpyHostToDevice,
  cudaMemcpyDeviceToHost,
  cudaMemcpyDeviceToDevice,
  cudaMemcpyDefault
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize, cudaFuncAttributePreferredSharedMemoryCarveout };
using cudaStream_t = struct PjEmuStream*;
struct PjEmuEvent { std::chrono::steady_clock::time_point at; };
using cudaEvent_t = PjEmuEvent*;
struct cudaDeviceProp {
  char name[256] = "the judge's CPU emulator";
  int major = 8, minor = 0, multiProcessorCount = 1, warpSize = 32, maxThreadsPerBlock = 1024,
      maxThreadsPerMultiProcessor = 2048, regsPerBlock = 65536;
  size_t totalGlobalMem = size_t(4) << 30, sharedMemPerBlock = 48 * 1024,
         sharedMemPerBlockOptin = 227 * 1024;
};

namespace pjemu {

enum class Wait { none, block, warp, finished };

struct Fiber {
  ucontext_t context;
  std::vector<char> stack;
  dim3 index;
  unsigned linear = 0;
  Wait wait = Wait::none;
};

// What a kernel's code reads as threadIdx, blockIdx, ...: the running fiber's view.
struct State {
  dim3 thread, block, block_dim, grid_dim;
  std::vector<Fiber> fibers;
  Fiber* running = nullptr;
  ucontext_t scheduler;
  std::function<void()> kernel;
  std::vector<std::array<unsigned char, 16>> lanes;  // one value per thread, for the warp exchanges
  std::vector<unsigned char> dynamic_shared;
  cudaError_t error = cudaSuccess;
  unsigned launches = 0;
};

inline State& state() {
  static State s;
  return s;
}

constexpr size_t kStack = 96 * 1024;

inline void fiber_main() {
  State& s = state();
  s.kernel();
  s.running->wait = Wait::finished;
  swapcontext(&s.running->context, &s.scheduler);
}

// Back to the scheduler until the barrier this fiber now waits at is released.
inline void suspend(Wait why) {
  State& s = state();
  Fiber* me = s.running;
  me->wait = why;
  swapcontext(&me->context, &s.scheduler);
  s.thread = me->index;
}

inline void start_fibers(unsigned n) {
  State& s = state();
  if (s.fibers.size() < n) s.fibers.resize(n);
  s.lanes.assign(n + 32, {});
  const dim3 b = s.block_dim;
  for (unsigned i = 0; i < n; ++i) {
    Fiber& f = s.fibers[i];
    f.stack.resize(kStack);
    f.linear = i;
    f.index = dim3(i % b.x, (i / b.x) % b.y, i / (b.x * b.y));
    f.wait = Wait::none;
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack.data();
    f.context.uc_stack.ss_size = f.stack.size();
    f.context.uc_link = nullptr;
    makecontext(&f.context, fiber_main, 0);
  }
}

// Releases the fibers waiting at `why` in [lo, hi) when every live one there waits at it.
inline bool release(unsigned lo, unsigned hi, Wait why) {
  State& s = state();
  unsigned waiting = 0, live = 0;
  for (unsigned i = lo; i < hi; ++i) {
    live += s.fibers[i].wait != Wait::finished;
    waiting += s.fibers[i].wait == why;
  }
  if (waiting == 0 || waiting != live) return false;
  for (unsigned i = lo; i < hi; ++i)
    if (s.fibers[i].wait == why) s.fibers[i].wait = Wait::none;
  return true;
}

[[noreturn]] inline void deadlock() {
  const State& s = state();
  std::fprintf(stderr, "\n==PJ-EMU deadlock in block (%u,%u,%u) of launch %u: its threads wait at "
               "barriers that the others never reach==\n", s.block.x, s.block.y, s.block.z, s.launches);
  std::fflush(nullptr);
  std::_Exit(PJ_EMU_DEADLOCK);
}

inline void run_block(unsigned n) {
  State& s = state();
  start_fibers(n);
  for (;;) {
    bool moved = false;
    for (unsigned i = 0; i < n; ++i) {
      Fiber& f = s.fibers[i];
      if (f.wait != Wait::none) continue;
      s.running = &f;
      s.thread = f.index;
      swapcontext(&s.scheduler, &f.context);
      moved = true;
    }
    bool all_done = std::all_of(s.fibers.begin(), s.fibers.begin() + n,
                                [](const Fiber& f) { return f.wait == Wait::finished; });
    if (all_done) return;
    bool released = release(0, n, Wait::block);
    for (unsigned lo = 0; lo < n; lo += 32) released = release(lo, std::min(n, lo + 32), Wait::warp) || released;
    if (!moved && !released) deadlock();
  }
}

inline bool valid(dim3 g, dim3 b, size_t shared) {
  unsigned long long threads = 1ull * b.x * b.y * b.z;
  return threads >= 1 && threads <= 1024 && b.x <= 1024 && b.y <= 1024 && b.z <= 64 && g.x >= 1 &&
         g.y >= 1 && g.z >= 1 && g.x <= 0x7fffffffu && g.y <= 65535 && g.z <= 65535 &&
         shared <= 227 * 1024;
}

inline void run_grid(dim3 g, dim3 b, size_t shared, std::function<void()> kernel) {
  State& s = state();
  ++s.launches;
  if (!valid(g, b, shared)) {
    s.error = cudaErrorInvalidConfiguration;
    return;
  }
  s.kernel = std::move(kernel);
  s.dynamic_shared.assign(shared + 16, 0);
  s.grid_dim = g;
  s.block_dim = b;
  for (unsigned z = 0; z < g.z; ++z)
    for (unsigned y = 0; y < g.y; ++y)
      for (unsigned x = 0; x < g.x; ++x) {
        s.block = dim3(x, y, z);
        run_block(b.x * b.y * b.z);
      }
}

inline void* dynamic_shared() { return state().dynamic_shared.data(); }

// `k<<<g, b, shared, stream>>>(args)`: the arguments are copied, as a launch copies them.
template <class... P>
struct Launch {
  void (*kernel)(P...);
  dim3 grid, block;
  size_t shared;
  template <class... A>
  void operator()(A&&... a) const {
    std::tuple<std::decay_t<P>...> args(std::forward<A>(a)...);
    auto k = kernel;
    run_grid(grid, block, shared, [k, &args] { std::apply(k, args); });
  }
};

template <class... P>
Launch<P...> launcher(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared = 0, cudaStream_t = nullptr) {
  return Launch<P...>{kernel, grid, block, shared};
}

inline unsigned lane() { return state().running->linear % 32; }
inline unsigned warp_base() { return state().running->linear - lane(); }
inline unsigned block_threads() {
  const State& s = state();
  return s.block_dim.x * s.block_dim.y * s.block_dim.z;
}

// Every live lane of the warp puts its value, waits, reads the one of `from`, waits again (so
// that no lane overwrites its slot before all have read).
template <class T>
T exchange(T v, unsigned from) {
  static_assert(sizeof(T) <= 16, "a warp exchange of a value over 16 bytes");
  State& s = state();
  unsigned me = s.running->linear;
  std::memcpy(s.lanes[me].data(), &v, sizeof(T));
  suspend(Wait::warp);
  unsigned src = warp_base() + from;
  T out = v;
  if (src < block_threads()) std::memcpy(&out, s.lanes[src].data(), sizeof(T));
  suspend(Wait::warp);
  return out;
}

}  // namespace pjemu

#define threadIdx (::pjemu::state().thread)
#define blockIdx (::pjemu::state().block)
#define blockDim (::pjemu::state().block_dim)
#define gridDim (::pjemu::state().grid_dim)
constexpr int warpSize = 32;

// CUDA's min and max: an overload per type (which wins over std::min where a file says
// `using namespace std`), and the usual arithmetic conversions for two types
#define PJEMU_MINMAX(T)                                   \
  inline T min(T a, T b) { return b < a ? b : a; }        \
  inline T max(T a, T b) { return a < b ? b : a; }
PJEMU_MINMAX(int)
PJEMU_MINMAX(unsigned)
PJEMU_MINMAX(long)
PJEMU_MINMAX(unsigned long)
PJEMU_MINMAX(long long)
PJEMU_MINMAX(unsigned long long)
PJEMU_MINMAX(float)
PJEMU_MINMAX(double)
#undef PJEMU_MINMAX
template <class A, class B, class = std::enable_if_t<!std::is_same_v<A, B>>>
inline std::common_type_t<A, B> min(A a, B b) {
  using C = std::common_type_t<A, B>;
  return C(b) < C(a) ? C(b) : C(a);
}
template <class A, class B, class = std::enable_if_t<!std::is_same_v<A, B>>>
inline std::common_type_t<A, B> max(A a, B b) {
  using C = std::common_type_t<A, B>;
  return C(a) < C(b) ? C(b) : C(a);
}

inline void __syncthreads() { pjemu::suspend(pjemu::Wait::block); }
inline int __syncthreads_or(int p) { return p; }
inline void __syncwarp(unsigned = 0xffffffffu) { pjemu::suspend(pjemu::Wait::warp); }
inline void __threadfence() {}
inline void __threadfence_block() {}
inline unsigned __activemask() { return 0xffffffffu; }

template <class T>
T __shfl_sync(unsigned, T v, int src, int width = 32) {
  unsigned l = pjemu::lane();
  return pjemu::exchange(v, (l / width) * width + unsigned(src) % width);
}
template <class T>
T __shfl_down_sync(unsigned, T v, unsigned d, int width = 32) {
  unsigned l = pjemu::lane(), end = (l / width) * width + width;
  return pjemu::exchange(v, l + d < end ? l + d : l);
}
template <class T>
T __shfl_up_sync(unsigned, T v, unsigned d, int width = 32) {
  unsigned l = pjemu::lane(), start = (l / width) * width;
  return pjemu::exchange(v, l >= start + d ? l - d : l);
}
template <class T>
T __shfl_xor_sync(unsigned, T v, int mask, int width = 32) {
  unsigned l = pjemu::lane(), start = (l / width) * width, to = l ^ unsigned(mask);
  return pjemu::exchange(v, to >= start && to < start + width ? to : l);
}
inline unsigned __ballot_sync(unsigned, int p) {
  unsigned bits = 0, base = pjemu::warp_base(), n = pjemu::block_threads();
  for (unsigned l = 0; l < 32 && base + l < n; ++l)
    if (pjemu::exchange(p ? 1 : 0, l)) bits |= 1u << l;
  return bits;
}
inline int __any_sync(unsigned m, int p) { return __ballot_sync(m, p) != 0; }
inline int __all_sync(unsigned m, int p) {
  unsigned n = std::min(32u, pjemu::block_threads() - pjemu::warp_base());
  return __ballot_sync(m, p) == (n == 32 ? 0xffffffffu : (1u << n) - 1);
}
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz(unsigned(x)) : 32; }
inline int __ffs(int x) { return __builtin_ffs(x); }

// one thread runs at a time, so a read-modify-write is atomic as it stands
template <class T> T atomicAdd(T* p, T v) { T old = *p; *p = old + v; return old; }
template <class T> T atomicSub(T* p, T v) { T old = *p; *p = old - v; return old; }
template <class T> T atomicMax(T* p, T v) { T old = *p; *p = old < v ? v : old; return old; }
template <class T> T atomicMin(T* p, T v) { T old = *p; *p = v < old ? v : old; return old; }
template <class T> T atomicExch(T* p, T v) { T old = *p; *p = v; return old; }
template <class T> T atomicAnd(T* p, T v) { T old = *p; *p = old & v; return old; }
template <class T> T atomicOr(T* p, T v) { T old = *p; *p = old | v; return old; }
template <class T> T atomicCAS(T* p, T expected, T v) { T old = *p; if (old == expected) *p = v; return old; }

template <class To, class From>
inline To pjemu_bits(From f) { To t; std::memcpy(&t, &f, sizeof t); return t; }
inline float __int_as_float(int i) { return pjemu_bits<float>(i); }
inline int __float_as_int(float f) { return pjemu_bits<int>(f); }
inline unsigned __float_as_uint(float f) { return pjemu_bits<unsigned>(f); }
inline float __uint_as_float(unsigned u) { return pjemu_bits<float>(u); }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __powf(float a, float b) { return powf(a, b); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0.f ? 0.f : x > 1.f ? 1.f : x; }
inline float rsqrtf(float x) { return 1.f / sqrtf(x); }
inline float __frcp_rn(float x) { return 1.f / x; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
template <class T> T __ldg(const T* p) { return *p; }

// ---- the runtime API a test and a solution call ----
inline const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    default: return "invalid argument";
  }
}
inline const char* cudaGetErrorName(cudaError_t e) {
  return e == cudaSuccess ? "cudaSuccess" : e == cudaErrorInvalidConfiguration ? "cudaErrorInvalidConfiguration"
                                                                               : "cudaErrorInvalidValue";
}
inline cudaError_t cudaGetLastError() {
  cudaError_t e = pjemu::state().error;
  pjemu::state().error = cudaSuccess;
  return e;
}
inline cudaError_t cudaPeekAtLastError() { return pjemu::state().error; }
inline cudaError_t cudaMalloc(void** p, size_t n) {
  *p = std::aligned_alloc(256, (n + 255) / 256 * 256 + 256);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
template <class T>
cudaError_t cudaMalloc(T** p, size_t n) { return cudaMalloc(reinterpret_cast<void**>(p), n); }
template <class T>
cudaError_t cudaMallocManaged(T** p, size_t n, unsigned = 1) { return cudaMalloc(reinterpret_cast<void**>(p), n); }
template <class T>
cudaError_t cudaMallocHost(T** p, size_t n) { return cudaMalloc(reinterpret_cast<void**>(p), n); }
inline cudaError_t cudaFree(void* p) { std::free(p); return cudaSuccess; }
inline cudaError_t cudaFreeHost(void* p) { std::free(p); return cudaSuccess; }
inline cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind) {
  if (n) std::memmove(d, s, n);
  return cudaSuccess;
}
inline cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k, cudaStream_t = nullptr) {
  return cudaMemcpy(d, s, n, k);
}
inline cudaError_t cudaMemset(void* d, int v, size_t n) { std::memset(d, v, n); return cudaSuccess; }
inline cudaError_t cudaMemsetAsync(void* d, int v, size_t n, cudaStream_t = nullptr) { return cudaMemset(d, v, n); }
template <class T>
cudaError_t cudaMemcpyToSymbol(T& symbol, const void* src, size_t n, size_t offset = 0,
                               cudaMemcpyKind = cudaMemcpyHostToDevice) {
  std::memcpy(reinterpret_cast<char*>(&symbol) + offset, src, n);
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() { return pjemu::state().error; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaStreamCreate(cudaStream_t* s) { *s = nullptr; return cudaSuccess; }
inline cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
inline cudaError_t cudaSetDevice(int) { return cudaSuccess; }
inline cudaError_t cudaGetDevice(int* d) { *d = 0; return cudaSuccess; }
inline cudaError_t cudaGetDeviceCount(int* n) { *n = 1; return cudaSuccess; }
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) { *p = cudaDeviceProp{}; return cudaSuccess; }
template <class F>
cudaError_t cudaFuncSetAttribute(F, cudaFuncAttribute, int) { return cudaSuccess; }
inline cudaError_t cudaEventCreate(cudaEvent_t* e) { *e = new PjEmuEvent{}; return cudaSuccess; }
inline cudaError_t cudaEventDestroy(cudaEvent_t e) { delete e; return cudaSuccess; }
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t = nullptr) {
  e->at = std::chrono::steady_clock::now();
  return cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return cudaSuccess;
}
