// Plain C++ interface of the CPU conformance kernels. No torch headers here: these
// translation units compile in about a second each, so the JIT build only pays for the
// torch headers once, in the glue (torch/xk_ops.cpp).
#pragma once

#include <cstdint>

namespace xk {

enum class Dtype : int { f32 = 0, f16 = 1, bf16 = 2 };

// Instruction-set paths. Every path is compiled into the library (each in its own
// translation unit with its own target options); which one runs is decided at run time
// from the detected CPU features and can be forced with XCOMPAT_KERNELS_ISA.
enum class Isa : int { scalar = 0, avx2 = 1, avx512 = 2, neon = 3 };
constexpr int kIsaCount = 4;

struct CpuTable {
  // out[i] = a[i] + b[i]          (computed in fp32, rounded once to the dtype)
  void (*add)(const void* a, const void* b, void* out, int64_t n, Dtype dt);
  // out[i] = a[i] * b[i] + c[i]   (fused in fp32, rounded once to the dtype)
  void (*fma)(const void* a, const void* b, const void* c, void* out, int64_t n, Dtype dt);
  // out[i] = exp(a[i])
  void (*exp)(const void* a, void* out, int64_t n, Dtype dt);
  // row-wise numerically stable softmax over fp32 rows of length cols
  void (*softmax)(const float* in, float* out, int64_t rows, int64_t cols);
  // sum of n fp32 values in a fixed order (bitwise reproducible for a given path and n)
  float (*sum)(const float* x, int64_t n);
};

const char* isa_name(Isa isa);
bool isa_from_name(const char* name, Isa* out);
bool isa_compiled(Isa isa);   // a path for this ISA exists in this build
bool isa_supported(Isa isa);  // ...and the CPU (and OS) can run it
Isa isa_best();
const CpuTable* cpu_table(Isa isa);  // nullptr when not compiled

// Per-ISA tables (nullptr when the ISA is not built for this architecture).
const CpuTable* table_scalar();
const CpuTable* table_avx2();
const CpuTable* table_avx512();
const CpuTable* table_neon();

// Sum of n fp32 values by `threads` threads that each add their partial sum into one
// shared float with an atomic compare-and-swap: the order of the adds is not fixed.
float sum_atomic(const float* x, int64_t n, int threads);
// out[idx[i]] += w[i] by `threads` threads with atomic float adds (heavy contention when
// the indices repeat). Indices must be in [0, bins): the caller checks.
void scatter_add_atomic(const int64_t* idx, const float* w, int64_t n, float* out, int64_t bins, int threads);

}  // namespace xk
