// CUDA kernel of sample_ext::scaled_add. Deliberately free of torch headers:
// nvcc compiles this into a small shared library (static cudart) and the torch
// registration in ops.cpp calls the extern "C" launcher.
#include <cuda_runtime.h>

#include <cstdint>

namespace {

__global__ void scaled_add_kernel(const float* __restrict__ a, const float* __restrict__ b, float alpha, int clamp,
                                  float* __restrict__ out, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (; i < n; i += stride) {
    float v = a[i] + alpha * b[i];
    if (clamp) v = fminf(fmaxf(v, -1.0f), 1.0f);
    out[i] = v;
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int sample_scaled_add_cuda_launch(
    const float* a, const float* b, float alpha, int clamp, float* out, int64_t n, void* stream) {
  if (n <= 0) return 0;
  const int threads = 256;
  int64_t blocks64 = (n + threads - 1) / threads;
  const int blocks = blocks64 > 65535 ? 65535 : static_cast<int>(blocks64);
  scaled_add_kernel<<<blocks, threads, 0, static_cast<cudaStream_t>(stream)>>>(a, b, alpha, clamp, out, n);
  return static_cast<int>(cudaGetLastError());
}

extern "C" __attribute__((visibility("default"))) const char* sample_cuda_error_string(int code) {
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}
