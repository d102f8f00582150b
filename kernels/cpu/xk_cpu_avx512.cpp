// AVX-512 (F/BW/VL/DQ) path (x86-64). Target options apply to this file only; the
// dispatcher calls into it only after checking the CPU and OS support AVX-512.
#include "xk_cpu.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")
// GCC 12's AVX-512 intrinsic headers trip its own uninitialised-value warnings
// (`__Y = __Y` placeholders); they are false positives.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace xk {
namespace avx512 {
#include "xk_cpu_common.h"

struct V {
  using F = __m512;
  static constexpr int64_t W = 16;
  static inline F load(const void* p, int64_t i, Dtype dt) {
    if (dt == Dtype::f32) return _mm512_loadu_ps(static_cast<const float*>(p) + i);
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(p) + i));
    if (dt == Dtype::f16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static inline void store(void* p, int64_t i, F v, Dtype dt) {
    if (dt == Dtype::f32) { _mm512_storeu_ps(static_cast<float*>(p) + i, v); return; }
    __m256i h;
    if (dt == Dtype::f16) {
      h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    } else {
      const __m512i x = _mm512_castps_si512(v);
      const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(1));
      __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7FFF)), lsb), 16);
      const __m512i qnan = _mm512_or_si512(_mm512_srli_epi32(x, 16), _mm512_set1_epi32(0x40));
      const __mmask16 isnan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      r = _mm512_mask_blend_epi32(isnan, r, qnan);
      h = _mm512_cvtepi32_epi16(r);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(static_cast<uint16_t*>(p) + i), h);
  }
  static inline F loadf(const float* p) { return _mm512_loadu_ps(p); }
  static inline void storef(float* p, F v) { _mm512_storeu_ps(p, v); }
  static inline F set1(float f) { return _mm512_set1_ps(f); }
  static inline F add(F a, F b) { return _mm512_add_ps(a, b); }
  static inline F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static inline F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static inline F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static inline F max(F a, F b) { return _mm512_max_ps(a, b); }
  static inline F min(F a, F b) { return _mm512_min_ps(a, b); }
  static inline F floor(F a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  static inline F trunc(F a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
  static inline F pow2(F n) {
    const __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_slli_epi32(e, 23));
  }
  static inline F gt_select(F x, float t, F yes, F no) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(t), _CMP_GT_OQ), no, yes);
  }
  static inline F lt_select(F x, float t, F yes, F no) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(t), _CMP_LT_OQ), no, yes);
  }
  static inline F nan_select(F x, F other) {
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), other, x);
  }
  static inline bool any_nan(F x) { return _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q) != 0; }
  static inline float hsum(F v) { return _mm512_reduce_add_ps(v); }
  static inline float hmax(F v) { return _mm512_reduce_max_ps(v); }
};

#include "xk_cpu_body.h"
}  // namespace avx512
}  // namespace xk

#if defined(__clang__)
#pragma clang attribute pop
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif

const xk::CpuTable* xk::table_avx512() { return &avx512::kTable; }
#else
const xk::CpuTable* xk::table_avx512() { return nullptr; }
#endif
