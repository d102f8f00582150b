// A deliberate out-of-bounds global write, for compute-sanitizer in `make device-check`:
// memcheck must report it ("Invalid __global__ write") and exit with --error-exitcode.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void write_past_the_end(int* out, int n) { out[threadIdx.x] = n; }  // 64 threads, 32 ints

int main() {
  int* buf = nullptr;
  if (cudaMalloc(&buf, 32 * sizeof(int)) != cudaSuccess) return 3;
  write_past_the_end<<<1, 64>>>(buf, 32);
  cudaError_t err = cudaDeviceSynchronize();
  std::printf("kernel finished: %s\n", cudaGetErrorString(err));
  cudaFree(buf);
  return 0;
}
