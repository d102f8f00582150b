// Metal versions of the conformance kernels, compiled at run time with
// torch.mps.compile_shader (torch >= 2.7). One thread per element (per row for softmax).
#include <metal_stdlib>
using namespace metal;

template <typename T>
kernel void xk_add(device const T* a [[buffer(0)]], device const T* b [[buffer(1)]], device T* out [[buffer(2)]],
                   uint i [[thread_position_in_grid]]) {
  out[i] = T(float(a[i]) + float(b[i]));
}

template <typename T>
kernel void xk_fma(device const T* a [[buffer(0)]], device const T* b [[buffer(1)]], device const T* c [[buffer(2)]],
                   device T* out [[buffer(3)]], uint i [[thread_position_in_grid]]) {
  out[i] = T(precise::fma(float(a[i]), float(b[i]), float(c[i])));
}

template <typename T>
kernel void xk_exp(device const T* a [[buffer(0)]], device T* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  out[i] = T(precise::exp(float(a[i])));
}

template [[host_name("xk_add_float")]] kernel void xk_add<float>(device const float*, device const float*, device float*, uint);
template [[host_name("xk_add_half")]] kernel void xk_add<half>(device const half*, device const half*, device half*, uint);
template [[host_name("xk_fma_float")]] kernel void xk_fma<float>(device const float*, device const float*, device const float*, device float*, uint);
template [[host_name("xk_fma_half")]] kernel void xk_fma<half>(device const half*, device const half*, device const half*, device half*, uint);
template [[host_name("xk_exp_float")]] kernel void xk_exp<float>(device const float*, device float*, uint);
template [[host_name("xk_exp_half")]] kernel void xk_exp<half>(device const half*, device half*, uint);

// One thread per row; NaN or +inf anywhere, or a row of -inf, gives a NaN row.
kernel void xk_softmax_float(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                             constant long& ncols [[buffer(2)]], uint row [[thread_position_in_grid]]) {
  // Python ints reach Metal as 64-bit constants (torch.mps.compile_shader). The row offset
  // is computed in 64 bits: row * cols overflows 32 bits past 4 Gi elements.
  const ulong cols = ulong(ncols);
  device const float* x = in + ulong(row) * cols;
  device float* y = out + ulong(row) * cols;
  float m = -INFINITY;
  bool nan = false;
  for (ulong j = 0; j < cols; ++j) { nan = nan || isnan(x[j]); m = max(m, x[j]); }
  if (nan) m = NAN;
  float s = 0.0f;
  for (ulong j = 0; j < cols; ++j) { y[j] = precise::exp(x[j] - m); s += y[j]; }
  for (ulong j = 0; j < cols; ++j) y[j] = y[j] / s;
}

// Heavy-contention float atomics (Metal 3). An index outside [0, bins) is never written:
// it is counted into *bad, and the host raises.
kernel void xk_scatter_add(device const long* idx [[buffer(0)]], device const float* w [[buffer(1)]],
                           device atomic_float* out [[buffer(2)]], device atomic_int* bad [[buffer(3)]],
                           constant long& bins [[buffer(4)]], uint i [[thread_position_in_grid]]) {
  const long k = idx[i];
  if (k < 0 || k >= bins) {
    atomic_fetch_add_explicit(bad, 1, memory_order_relaxed);
    return;
  }
  atomic_fetch_add_explicit(out + k, w[i], memory_order_relaxed);
}
