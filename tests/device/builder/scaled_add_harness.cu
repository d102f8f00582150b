// Runs the sample's CUDA launcher (from libsample_ext_cuda.so, loaded with dlopen) on the
// GPU and compares with a float64 reference on the host. Prints "ok" or the first mismatch.
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

using launch_t = int (*)(const float*, const float*, float, int, float*, int64_t, void*);

int main(int argc, char** argv) {
  if (argc != 2) { std::fprintf(stderr, "usage: %s LIB\n", argv[0]); return 2; }
  void* lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) { std::fprintf(stderr, "dlopen: %s\n", dlerror()); return 2; }
  auto launch = reinterpret_cast<launch_t>(dlsym(lib, "sample_scaled_add_cuda_launch"));
  if (!launch) { std::fprintf(stderr, "launcher not exported\n"); return 2; }
  const int64_t n = 1000003;
  std::vector<float> a(n), b(n), out(n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = std::sin(0.001 * i);
    b[i] = std::cos(0.0007 * i) * 1.5f;
  }
  float *da, *db, *dout;
  if (cudaMalloc(&da, n * 4) || cudaMalloc(&db, n * 4) || cudaMalloc(&dout, n * 4)) {
    std::fprintf(stderr, "cudaMalloc failed\n"); return 3;
  }
  cudaMemcpy(da, a.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), n * 4, cudaMemcpyHostToDevice);
  for (int clamp = 0; clamp < 2; ++clamp) {
    const float alpha = 0.75f;
    int rc = launch(da, db, alpha, clamp, dout, n, nullptr);
    if (rc != 0 || cudaDeviceSynchronize() != cudaSuccess) { std::fprintf(stderr, "launch failed %d\n", rc); return 4; }
    cudaMemcpy(out.data(), dout, n * 4, cudaMemcpyDeviceToHost);
    for (int64_t i = 0; i < n; ++i) {
      double ref = static_cast<double>(a[i]) + static_cast<double>(alpha) * b[i];
      if (clamp) ref = ref < -1.0 ? -1.0 : (ref > 1.0 ? 1.0 : ref);
      if (std::fabs(out[i] - ref) > 1e-6 + 1e-6 * std::fabs(ref)) {
        std::printf("mismatch clamp=%d at %lld: %.9g vs %.9g\n", clamp, (long long)i, out[i], ref);
        return 1;
      }
    }
  }
  std::printf("ok\n");
  return 0;
}
