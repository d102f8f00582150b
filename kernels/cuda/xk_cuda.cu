// CUDA conformance kernels (hipified by torch's build on ROCm). Raw kernels and launchers
// with plain pointers; the torch glue lives in ../torch/xk_ops_cuda.cpp.
//
// Indexing is 64-bit throughout (int64_t element counts and grid-stride loops), so tensors
// of more than 2^31 elements are addressed correctly.

// ROCm 6.2-6.x provide the *_sync warp intrinsics only when this is defined before the HIP
// headers (the build also passes it); ROCm 7 has them on by default.
#if (defined(__HIP_PLATFORM_AMD__) || defined(USE_ROCM)) && !defined(HIP_ENABLE_WARP_SYNC_BUILTINS)
#define HIP_ENABLE_WARP_SYNC_BUILTINS 1
#endif

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#include "xk_cuda.h"

// Warp shuffle-down over the full warp. HIP on AMD: __shfl_down_sync takes a 64-bit mask
// (wave64) and exists from ROCm 6.2; older ROCm has only the mask-less __shfl_down.
#if defined(__HIP_PLATFORM_AMD__) || defined(USE_ROCM)
#if defined(HIP_VERSION) && HIP_VERSION >= 60200000
#define XK_SHFL_DOWN(v, off) __shfl_down_sync(0xffffffffffffffffull, (v), (off))
#else
#define XK_SHFL_DOWN(v, off) __shfl_down((v), (off))
#endif
#else
#define XK_SHFL_DOWN(v, off) __shfl_down_sync(0xffffffffu, (v), (off))
#endif

namespace {

constexpr int kBlock = 256;

__device__ __forceinline__ float ld(const void* p, int64_t i, int dt) {
  if (dt == 0) return static_cast<const float*>(p)[i];
  if (dt == 1) return __half2float(static_cast<const __half*>(p)[i]);
  return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
}

__device__ __forceinline__ void st(void* p, int64_t i, float v, int dt) {
  if (dt == 0) static_cast<float*>(p)[i] = v;
  else if (dt == 1) static_cast<__half*>(p)[i] = __float2half_rn(v);
  else static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
}

__global__ void add_kernel(int dt, const void* a, const void* b, void* out, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    st(out, i, ld(a, i, dt) + ld(b, i, dt), dt);
}

__global__ void fma_kernel(int dt, const void* a, const void* b, const void* c, void* out, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    st(out, i, fmaf(ld(a, i, dt), ld(b, i, dt), ld(c, i, dt)), dt);
}

__global__ void exp_kernel(int dt, const void* a, void* out, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    st(out, i, expf(ld(a, i, dt)), dt);
}

__device__ __forceinline__ float block_reduce_max(float v, float* shared) {
  for (int off = warpSize / 2; off > 0; off /= 2) v = fmaxf(v, XK_SHFL_DOWN(v, off));
  const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + warpSize - 1) / warpSize;
  v = threadIdx.x < warps ? shared[threadIdx.x] : -INFINITY;
  if (warp == 0)
    for (int off = warpSize / 2; off > 0; off /= 2) v = fmaxf(v, XK_SHFL_DOWN(v, off));
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  v = shared[0];
  __syncthreads();
  return v;
}

__device__ __forceinline__ float block_reduce_sum(float v, float* shared) {
  for (int off = warpSize / 2; off > 0; off /= 2) v += XK_SHFL_DOWN(v, off);
  const int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + warpSize - 1) / warpSize;
  v = threadIdx.x < warps ? shared[threadIdx.x] : 0.0f;
  if (warp == 0)
    for (int off = warpSize / 2; off > 0; off /= 2) v += XK_SHFL_DOWN(v, off);
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  v = shared[0];
  __syncthreads();
  return v;
}

// One block per row. NaN anywhere in the row makes the whole row NaN (as the float64
// reference does); a row of -inf gives NaN (-inf - -inf).
__global__ void softmax_kernel(const float* in, float* out, int64_t cols) {
  __shared__ float shared[64];
  __shared__ int has_nan;
  const float* x = in + blockIdx.x * cols;
  float* y = out + blockIdx.x * cols;
  if (threadIdx.x == 0) has_nan = 0;
  __syncthreads();
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float v = x[j];
    if (isnan(v)) has_nan = 1;
    m = fmaxf(m, v);
  }
  m = block_reduce_max(m, shared);
  if (has_nan) m = NAN;
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float e = expf(x[j] - m);
    y[j] = e;
    s += e;
  }
  s = block_reduce_sum(s, shared);
  const float inv = 1.0f / s;
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) y[j] *= inv;
}

__global__ void partial_sum_kernel(const float* x, int64_t n, float* partials) {
  __shared__ float shared[64];
  float s = 0.0f;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    s += x[i];
  s = block_reduce_sum(s, shared);
  if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

__global__ void final_sum_kernel(const float* partials, int64_t count, float* out) {
  __shared__ float shared[64];
  float s = 0.0f;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) s += partials[i];
  s = block_reduce_sum(s, shared);
  if (threadIdx.x == 0) *out = s;
}

__global__ void atomic_sum_kernel(const float* x, int64_t n, float* out) {
  __shared__ float shared[64];
  float s = 0.0f;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    s += x[i];
  s = block_reduce_sum(s, shared);
  if (threadIdx.x == 0) atomicAdd(out, s);
}

__global__ void scatter_add_kernel(const int64_t* idx, const float* w, int64_t n, float* out, int64_t bins,
                                   unsigned long long* bad) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    const int64_t k = idx[i];
    if (k < 0 || k >= bins) { atomicAdd(bad, 1ull); continue; }  // 64-bit: cannot wrap
    atomicAdd(out + k, w[i]);
  }
}

inline unsigned grid_for(int64_t n, int64_t cap = 4096) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > cap ? cap : blocks));
}

inline int last_error() { return static_cast<int>(cudaGetLastError()); }

}  // namespace

namespace xk_cuda {

int add(int dtype, const void* a, const void* b, void* out, int64_t n, void* stream) {
  if (n == 0) return 0;
  add_kernel<<<grid_for(n), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(dtype, a, b, out, n);
  return last_error();
}

int fma(int dtype, const void* a, const void* b, const void* c, void* out, int64_t n, void* stream) {
  if (n == 0) return 0;
  fma_kernel<<<grid_for(n), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(dtype, a, b, c, out, n);
  return last_error();
}

int exp(int dtype, const void* a, void* out, int64_t n, void* stream) {
  if (n == 0) return 0;
  exp_kernel<<<grid_for(n), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(dtype, a, out, n);
  return last_error();
}

int softmax(const float* in, float* out, int64_t rows, int64_t cols, void* stream) {
  if (rows == 0 || cols == 0) return 0;
  if (rows > 2147483647LL) return static_cast<int>(cudaErrorInvalidValue);
  softmax_kernel<<<static_cast<unsigned>(rows), kBlock, 0, static_cast<cudaStream_t>(stream)>>>(in, out, cols);
  return last_error();
}

int64_t sum_scratch_floats(int64_t n) { return grid_for(n); }

int sum_deterministic(const float* x, int64_t n, float* scratch, float* out, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const unsigned grid = grid_for(n);
  partial_sum_kernel<<<grid, kBlock, 0, s>>>(x, n, scratch);
  final_sum_kernel<<<1, kBlock, 0, s>>>(scratch, grid, out);
  return last_error();
}

int sum_atomic(const float* x, int64_t n, float* out, int64_t blocks, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  // the accumulator is zeroed here, on the stream: the output may arrive poisoned
  cudaError_t err = cudaMemsetAsync(out, 0, sizeof(float), s);
  if (err != cudaSuccess || n == 0) return static_cast<int>(err);
  atomic_sum_kernel<<<grid_for(n, blocks), kBlock, 0, s>>>(x, n, out);
  return last_error();
}

int scatter_add(const int64_t* idx, const float* w, int64_t n, float* out, int64_t bins,
                unsigned long long* bad, int64_t blocks, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  cudaError_t err = bins > 0 ? cudaMemsetAsync(out, 0, sizeof(float) * static_cast<size_t>(bins), s) : cudaSuccess;
  if (err == cudaSuccess) err = cudaMemsetAsync(bad, 0, sizeof(unsigned long long), s);
  if (err != cudaSuccess || n == 0) return static_cast<int>(err);
  scatter_add_kernel<<<grid_for(n, blocks), kBlock, 0, s>>>(idx, w, n, out, bins, bad);
  return last_error();
}

}  // namespace xk_cuda
