// Run-time choice of the CPU path, and the multi-threaded atomic kernels.
#include "xk_cpu.h"

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace xk {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::neon: return "neon";
  }
  return "unknown";
}

bool isa_from_name(const char* name, Isa* out) {
  for (int i = 0; i < kIsaCount; ++i) {
    if (std::strcmp(name, isa_name(static_cast<Isa>(i))) == 0) { *out = static_cast<Isa>(i); return true; }
  }
  return false;
}

const CpuTable* cpu_table(Isa isa) {
  switch (isa) {
    case Isa::scalar: return table_scalar();
    case Isa::avx2: return table_avx2();
    case Isa::avx512: return table_avx512();
    case Isa::neon: return table_neon();
  }
  return nullptr;
}

bool isa_compiled(Isa isa) { return cpu_table(isa) != nullptr; }

bool isa_supported(Isa isa) {
  if (!isa_compiled(isa)) return false;
  switch (isa) {
    case Isa::scalar: return true;
#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__))
    // __builtin_cpu_supports also checks that the OS saves the wider registers (XCR0).
    case Isa::avx2:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    case Isa::avx512:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
             __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
#endif
#if defined(__aarch64__) || defined(_M_ARM64)
    case Isa::neon: return true;  // Advanced SIMD is mandatory on AArch64
#endif
    default: return false;
  }
}

Isa isa_best() {
  const Isa order[] = {Isa::avx512, Isa::avx2, Isa::neon, Isa::scalar};
  for (Isa isa : order)
    if (isa_supported(isa)) return isa;
  return Isa::scalar;
}

namespace {
// atomic float add through a 32-bit compare-and-swap (std::atomic<float>::fetch_add is C++20)
inline void atomic_add_float(float* target, float value) {
  uint32_t* bits = reinterpret_cast<uint32_t*>(target);
  uint32_t expected = __atomic_load_n(bits, __ATOMIC_RELAXED);
  for (;;) {
    float cur;
    std::memcpy(&cur, &expected, 4);
    const float next = cur + value;
    uint32_t desired;
    std::memcpy(&desired, &next, 4);
    if (__atomic_compare_exchange_n(bits, &expected, desired, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) return;
  }
}

template <class Fn>
void run_threads(int threads, int64_t n, Fn fn) {
  if (threads < 1) threads = 1;
  if (n < threads) threads = n > 0 ? static_cast<int>(n) : 1;
  std::vector<std::thread> pool;
  const int64_t chunk = (n + threads - 1) / threads;
  for (int t = 0; t < threads; ++t) {
    const int64_t lo = t * chunk;
    const int64_t hi = lo + chunk < n ? lo + chunk : n;
    if (lo >= hi) break;
    pool.emplace_back([=] { fn(lo, hi); });
  }
  for (auto& th : pool) th.join();
}
}  // namespace

float sum_atomic(const float* x, int64_t n, int threads) {
  float total = 0.0f;
  // interleaved blocks: each thread adds many small partials, so the adds race
  run_threads(threads, n, [&](int64_t lo, int64_t hi) {
    const int64_t block = 64;
    for (int64_t i = lo; i < hi; i += block) {
      float part = 0.0f;
      const int64_t end = i + block < hi ? i + block : hi;
      for (int64_t j = i; j < end; ++j) part += x[j];
      atomic_add_float(&total, part);
    }
  });
  return total;
}

void scatter_add_atomic(const int64_t* idx, const float* w, int64_t n, float* out, int64_t bins, int threads) {
  (void)bins;
  run_threads(threads, n, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) atomic_add_float(out + idx[i], w[i]);
  });
}

}  // namespace xk
