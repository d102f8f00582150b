// AVX2 + FMA + F16C path (x86-64). Compiled with target options for this file only; the
// dispatcher calls into it only after checking the CPU supports all three.
#include "xk_cpu.h"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#elif defined(__GNUC__)
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace xk {
namespace avx2 {
#include "xk_cpu_common.h"

struct V {
  using F = __m256;
  static constexpr int64_t W = 8;
  static inline F load(const void* p, int64_t i, Dtype dt) {
    if (dt == Dtype::f32) return _mm256_loadu_ps(static_cast<const float*>(p) + i);
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(p) + i));
    if (dt == Dtype::f16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static inline void store(void* p, int64_t i, F v, Dtype dt) {
    if (dt == Dtype::f32) { _mm256_storeu_ps(static_cast<float*>(p) + i, v); return; }
    __m128i h;
    if (dt == Dtype::f16) {
      h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    } else {
      const __m256i x = _mm256_castps_si256(v);
      const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
      __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7FFF)), lsb), 16);
      const __m256i qnan = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
      const __m256 isnan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
      r = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_castsi256_ps(qnan), isnan));
      r = _mm256_and_si256(r, _mm256_set1_epi32(0xFFFF));
      h = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(static_cast<uint16_t*>(p) + i), h);
  }
  static inline F loadf(const float* p) { return _mm256_loadu_ps(p); }
  static inline void storef(float* p, F v) { _mm256_storeu_ps(p, v); }
  static inline F set1(float f) { return _mm256_set1_ps(f); }
  static inline F add(F a, F b) { return _mm256_add_ps(a, b); }
  static inline F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static inline F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static inline F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static inline F max(F a, F b) { return _mm256_max_ps(a, b); }
  static inline F min(F a, F b) { return _mm256_min_ps(a, b); }
  static inline F floor(F a) { return _mm256_floor_ps(a); }
  static inline F trunc(F a) { return _mm256_round_ps(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC); }
  static inline F pow2(F n) {
    const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
    return _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
  }
  static inline F gt_select(F x, float t, F yes, F no) {
    return _mm256_blendv_ps(no, yes, _mm256_cmp_ps(x, _mm256_set1_ps(t), _CMP_GT_OQ));
  }
  static inline F lt_select(F x, float t, F yes, F no) {
    return _mm256_blendv_ps(no, yes, _mm256_cmp_ps(x, _mm256_set1_ps(t), _CMP_LT_OQ));
  }
  static inline F nan_select(F x, F other) { return _mm256_blendv_ps(other, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q)); }
  static inline bool any_nan(F x) { return _mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)) != 0; }
  static inline float hsum(F v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
  static inline float hmax(F v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
  }
};

#include "xk_cpu_body.h"
}  // namespace avx2
}  // namespace xk

#if defined(__clang__)
#pragma clang attribute pop
#elif defined(__GNUC__)
#pragma GCC pop_options
#endif

const xk::CpuTable* xk::table_avx2() { return &avx2::kTable; }
#else
const xk::CpuTable* xk::table_avx2() { return nullptr; }
#endif
