// Portable scalar path: the reference behaviour every SIMD path must match, and the path
// a CPU without any supported vector extension runs.
#include "xk_cpu.h"

namespace xk {
namespace scalar {
#include "xk_cpu_common.h"

static void k_add(const void* a, const void* b, void* out, int64_t n, Dtype dt) {
  for (int64_t i = 0; i < n; ++i) store_one(out, i, load_one(a, i, dt) + load_one(b, i, dt), dt);
}
static void k_fma(const void* a, const void* b, const void* c, void* out, int64_t n, Dtype dt) {
  for (int64_t i = 0; i < n; ++i)
    store_one(out, i, __builtin_fmaf(load_one(a, i, dt), load_one(b, i, dt), load_one(c, i, dt)), dt);
}
static void k_exp(const void* a, void* out, int64_t n, Dtype dt) {
  for (int64_t i = 0; i < n; ++i) store_one(out, i, exp_one(load_one(a, i, dt)), dt);
}
static void k_softmax(const float* in, float* out, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) softmax_row_scalar(in + r * cols, out + r * cols, cols);
}
static float k_sum(const float* x, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += x[i];
  return s;
}
static const CpuTable kTable = {&k_add, &k_fma, &k_exp, &k_softmax, &k_sum};
}  // namespace scalar

const CpuTable* table_scalar() { return &scalar::kTable; }
}  // namespace xk
