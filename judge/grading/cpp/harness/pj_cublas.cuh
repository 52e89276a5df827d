// What the handbook's runtime/cuda/judge_cublas.cuh gives a test (this project's own code):
// pj::cublas_tier, a performance tier against cuBLAS. A tier is never part of a verdict here,
// so it says nothing, and the build needs no cuBLAS.
#pragma once
namespace pj {
template <class... A>
inline void cublas_tier(A&&...) {}
}  // namespace pj
