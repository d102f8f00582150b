// NEON (Advanced SIMD) path for arm64, where NEON is part of the baseline. fp16 lanes use
// the A64 conversions; bf16 uses integer widening/narrowing so no +bf16 extension is needed.
#include "xk_cpu.h"

#if defined(__aarch64__) || defined(_M_ARM64)
#include <arm_neon.h>

namespace xk {
namespace neon {
#include "xk_cpu_common.h"

struct V {
  using F = float32x4_t;
  static constexpr int64_t W = 4;
  static inline F load(const void* p, int64_t i, Dtype dt) {
    if (dt == Dtype::f32) return vld1q_f32(static_cast<const float*>(p) + i);
    const uint16x4_t h = vld1_u16(static_cast<const uint16_t*>(p) + i);
    if (dt == Dtype::f16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
  }
  static inline void store(void* p, int64_t i, F v, Dtype dt) {
    if (dt == Dtype::f32) { vst1q_f32(static_cast<float*>(p) + i, v); return; }
    uint16x4_t h;
    if (dt == Dtype::f16) {
      h = vreinterpret_u16_f16(vcvt_f16_f32(v));
    } else {
      const uint32x4_t x = vreinterpretq_u32_f32(v);
      const uint32x4_t lsb = vandq_u32(vshrq_n_u32(x, 16), vdupq_n_u32(1));
      uint32x4_t r = vshrq_n_u32(vaddq_u32(vaddq_u32(x, vdupq_n_u32(0x7FFF)), lsb), 16);
      const uint32x4_t qnan = vorrq_u32(vshrq_n_u32(x, 16), vdupq_n_u32(0x40));
      const uint32x4_t notnan = vceqq_f32(v, v);
      r = vbslq_u32(notnan, r, qnan);
      h = vmovn_u32(r);
    }
    vst1_u16(static_cast<uint16_t*>(p) + i, h);
  }
  static inline F loadf(const float* p) { return vld1q_f32(p); }
  static inline void storef(float* p, F v) { vst1q_f32(p, v); }
  static inline F set1(float f) { return vdupq_n_f32(f); }
  static inline F add(F a, F b) { return vaddq_f32(a, b); }
  static inline F sub(F a, F b) { return vsubq_f32(a, b); }
  static inline F mul(F a, F b) { return vmulq_f32(a, b); }
  static inline F fmadd(F a, F b, F c) { return vfmaq_f32(c, a, b); }
  static inline F max(F a, F b) { return vmaxnmq_f32(a, b); }
  static inline F min(F a, F b) { return vminnmq_f32(a, b); }
  static inline F floor(F a) { return vrndmq_f32(a); }
  static inline F trunc(F a) { return vrndq_f32(a); }
  static inline F pow2(F n) {
    const int32x4_t e = vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127));
    return vreinterpretq_f32_s32(vshlq_n_s32(e, 23));
  }
  static inline F gt_select(F x, float t, F yes, F no) { return vbslq_f32(vcgtq_f32(x, vdupq_n_f32(t)), yes, no); }
  static inline F lt_select(F x, float t, F yes, F no) { return vbslq_f32(vcltq_f32(x, vdupq_n_f32(t)), yes, no); }
  static inline F nan_select(F x, F other) { return vbslq_f32(vceqq_f32(x, x), other, x); }
  static inline bool any_nan(F x) { return vminvq_u32(vceqq_f32(x, x)) == 0; }
  static inline float hsum(F v) { return vaddvq_f32(v); }
  static inline float hmax(F v) { return vmaxnmvq_f32(v); }
};

#include "xk_cpu_body.h"
}  // namespace neon
}  // namespace xk

const xk::CpuTable* xk::table_neon() { return &neon::kTable; }
#else
const xk::CpuTable* xk::table_neon() { return nullptr; }
#endif
