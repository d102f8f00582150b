// The vector loop bodies, written once against a small vector API `V` that each ISA
// translation unit defines before including this file (inside its own namespace, after its
// target options). V provides: type F, lane count W, load/store for the three dtypes,
// loadf/storef, set1, add, sub, mul, fmadd (a*b+c, fused), max, floor, pow2 (2^n for
// integral n in the normal range), gt_select/lt_select, nan_select, any_nan, hsum, hmax.

static inline V::F v_exp(V::F x) {
  const V::F xc = V::max(V::min(x, V::set1(88.72283935546875f)), V::set1(-103.972084045410f));
  const V::F fx = V::floor(V::fmadd(xc, V::set1(1.44269504088896341f), V::set1(0.5f)));
  V::F r = V::fmadd(fx, V::set1(-0.693359375f), xc);
  r = V::fmadd(fx, V::set1(2.12194440e-4f), r);
  V::F p = V::set1(1.9875691500E-4f);
  p = V::fmadd(p, r, V::set1(1.3981999507E-3f));
  p = V::fmadd(p, r, V::set1(8.3334519073E-3f));
  p = V::fmadd(p, r, V::set1(4.1665795894E-2f));
  p = V::fmadd(p, r, V::set1(1.6666665459E-1f));
  p = V::fmadd(p, r, V::set1(5.0000001201E-1f));
  p = V::fmadd(V::mul(p, r), r, V::add(r, V::set1(1.0f)));
  // 2^n in two factors so results in the subnormal range stay correct (truncating n/2
  // like the scalar path does)
  const V::F half = V::mul(fx, V::set1(0.5f));
  const V::F n1 = V::trunc(half);
  const V::F n2 = V::sub(fx, n1);
  V::F y = V::mul(V::mul(p, V::pow2(n1)), V::pow2(n2));
  y = V::gt_select(x, 88.72283935546875f, V::set1(__builtin_inff()), y);
  y = V::lt_select(x, -103.972084045410f, V::set1(0.0f), y);
  return V::nan_select(x, y);
}

static void k_add(const void* a, const void* b, void* out, int64_t n, Dtype dt) {
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) V::store(out, i, V::add(V::load(a, i, dt), V::load(b, i, dt)), dt);
  for (; i < n; ++i) store_one(out, i, load_one(a, i, dt) + load_one(b, i, dt), dt);
}

static void k_fma(const void* a, const void* b, const void* c, void* out, int64_t n, Dtype dt) {
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W)
    V::store(out, i, V::fmadd(V::load(a, i, dt), V::load(b, i, dt), V::load(c, i, dt)), dt);
  for (; i < n; ++i)
    store_one(out, i, __builtin_fmaf(load_one(a, i, dt), load_one(b, i, dt), load_one(c, i, dt)), dt);
}

static void k_exp(const void* a, void* out, int64_t n, Dtype dt) {
  int64_t i = 0;
  for (; i + V::W <= n; i += V::W) V::store(out, i, v_exp(V::load(a, i, dt)), dt);
  for (; i < n; ++i) store_one(out, i, exp_one(load_one(a, i, dt)), dt);
}

static void k_softmax(const float* in, float* out, int64_t rows, int64_t cols) {
  for (int64_t row = 0; row < rows; ++row) {
    const float* x = in + row * cols;
    float* y = out + row * cols;
    if (cols < V::W) { softmax_row_scalar(x, y, cols); continue; }
    V::F vm = V::set1(-__builtin_inff());
    bool nan = false;
    int64_t j = 0;
    for (; j + V::W <= cols; j += V::W) {
      const V::F v = V::loadf(x + j);
      nan |= V::any_nan(v);
      vm = V::max(vm, v);
    }
    float m = V::hmax(vm);
    for (; j < cols; ++j) { nan |= (x[j] != x[j]); m = x[j] > m ? x[j] : m; }
    if (nan) m = __builtin_nanf("");
    const V::F bm = V::set1(m);
    V::F vs = V::set1(0.0f);
    j = 0;
    for (; j + V::W <= cols; j += V::W) {
      const V::F e = v_exp(V::sub(V::loadf(x + j), bm));
      V::storef(y + j, e);
      vs = V::add(vs, e);
    }
    float s = V::hsum(vs);
    for (; j < cols; ++j) { const float e = exp_one(x[j] - m); y[j] = e; s += e; }
    const float inv = 1.0f / s;
    const V::F binv = V::set1(inv);
    j = 0;
    for (; j + V::W <= cols; j += V::W) V::storef(y + j, V::mul(V::loadf(y + j), binv));
    for (; j < cols; ++j) y[j] *= inv;
  }
}

static float k_sum(const float* x, int64_t n) {
  V::F acc0 = V::set1(0.0f), acc1 = V::set1(0.0f);
  int64_t i = 0;
  for (; i + 2 * V::W <= n; i += 2 * V::W) {
    acc0 = V::add(acc0, V::loadf(x + i));
    acc1 = V::add(acc1, V::loadf(x + i + V::W));
  }
  for (; i + V::W <= n; i += V::W) acc0 = V::add(acc0, V::loadf(x + i));
  float s = V::hsum(V::add(acc0, acc1));
  for (; i < n; ++i) s += x[i];
  return s;
}

static const CpuTable kTable = {&k_add, &k_fma, &k_exp, &k_softmax, &k_sum};
