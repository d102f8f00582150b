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
// Atomic: at most `blocks` blocks each add their partial into *out with atomicAdd. *out is
// zeroed on the stream first (it may hold anything, e.g. the poison value).
int sum_atomic(const float* x, int64_t n, float* out, int64_t blocks, void* stream);
// out[idx[i]] += w[i] with global atomics (heavy contention when indices repeat) from at
// most `blocks` blocks; out[0..bins) and *bad are zeroed on the stream first. Indices
// outside [0, bins) are counted into *bad (64-bit, cannot wrap) instead of written.
int scatter_add(const int64_t* idx, const float* w, int64_t n, float* out, int64_t bins,
                unsigned long long* bad, int64_t blocks, void* stream);

}  // namespace xk_cuda
