// Launchers of the CUDA (and, hipified, HIP) conformance kernels. Plain pointers and a
// stream handle only: no torch headers, so nvcc compiles xk_cuda.cu in about a second
// instead of the ~80 s that <torch/extension.h> costs. Each returns a cudaError_t value
// (0 = success) so the caller can raise a torch error with the right message.
#pragma once

#include <cstdint>

namespace xk_cuda {

// dtype: 0 = float32, 1 = float16, 2 = bfloat16 (same numbering as xk::Dtype)
int add(int dtype, const void* a, const void* b, void* out, int64_t n, void* stream);
int fma(int dtype, const void* a, const void* b, const void* c, void* out, int64_t n, void* stream);
int exp(int dtype, const void* a, void* out, int64_t n, void* stream);
int softmax(const float* in, float* out, int64_t rows, int64_t cols, void* stream);
// Deterministic: per-block partial sums, then one block adds them in a fixed order.
// `scratch` holds at least sum_scratch_floats(n) floats.
int64_t sum_scratch_floats(int64_t n);
int sum_deterministic(const float* x, int64_t n, float* scratch, float* out, void* stream);
// Atomic: every block adds its partial into *out with atomicAdd (out must be zeroed).
int sum_atomic(const float* x, int64_t n, float* out, void* stream);
// out[idx[i]] += w[i] with global atomics (heavy contention when indices repeat); out zeroed.
// Indices outside [0, bins) are counted into *bad (int32) instead of written.
int scatter_add(const int64_t* idx, const float* w, int64_t n, float* out, int64_t bins, int* bad, void* stream);

}  // namespace xk_cuda
