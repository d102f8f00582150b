// Scalar helpers shared by every ISA path: fp16/bf16 <-> fp32 conversion done with
// integer arithmetic only (no compiler-specific half types), and the scalar loop bodies
// used for loop tails. Included inside an ISA namespace, after that translation unit's
// target options, so each path gets its own copy and no inline function compiled for a
// wider ISA can be picked by the linker for a narrower one.

static inline uint32_t f32_bits(float f) { uint32_t u; __builtin_memcpy(&u, &f, 4); return u; }
static inline float bits_f32(uint32_t u) { float f; __builtin_memcpy(&f, &u, 4); return f; }

static inline float half_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t mant = h & 0x3FFu;
  if (exp == 0) {
    if (mant == 0) return bits_f32(sign);
    // subnormal half: normalise
    int e = -1;
    do { ++e; mant <<= 1; } while ((mant & 0x400u) == 0);
    mant &= 0x3FFu;
    return bits_f32(sign | ((uint32_t)(127 - 15 - e) << 23) | (mant << 13));
  }
  if (exp == 0x1F) return bits_f32(sign | 0x7F800000u | (mant << 13));  // inf / nan
  return bits_f32(sign | ((exp + 127 - 15) << 23) | (mant << 13));
}

static inline uint16_t float_to_half(float f) {
  // round to nearest even, overflow to inf, underflow through subnormals, NaN stays NaN
  const uint32_t x = f32_bits(f);
  const uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return (uint16_t)(sign | 0x7E00u);  // NaN
  if (ax >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);  // >= 65520 rounds to inf
  if (ax < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    if (ax < 0x33000000u) return sign;  // below half of the smallest subnormal (2^-25)
    const uint32_t e = ax >> 23;
    const uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126u - e;  // 14 - (e - 127) + 13 = 126 - e (ranges 14..24)
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (r & 1u))) ++r;
    return (uint16_t)(sign | r);
  }
  uint32_t r = ax + 0xC8000FFFu + ((ax >> 13) & 1u);  // rebias (-112 << 23) and round to nearest even
  return (uint16_t)(sign | (r >> 13));
}

static inline float bf16_to_float(uint16_t h) { return bits_f32((uint32_t)h << 16); }

static inline uint16_t float_to_bf16(float f) {
  const uint32_t x = f32_bits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x40u);  // quiet NaN
  return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);  // round to nearest even
}

static inline float load_one(const void* p, int64_t i, Dtype dt) {
  switch (dt) {
    case Dtype::f32: return static_cast<const float*>(p)[i];
    case Dtype::f16: return half_to_float(static_cast<const uint16_t*>(p)[i]);
    default: return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
  }
}

static inline void store_one(void* p, int64_t i, float v, Dtype dt) {
  switch (dt) {
    case Dtype::f32: static_cast<float*>(p)[i] = v; break;
    case Dtype::f16: static_cast<uint16_t*>(p)[i] = float_to_half(v); break;
    default: static_cast<uint16_t*>(p)[i] = float_to_bf16(v); break;
  }
}

// Scalar exp used for tails and by the scalar path: the same range reduction as the
// vector paths, so every path handles overflow, underflow to subnormals, NaN and inf alike.
static inline float exp_one(float x) {
  if (x != x) return x;
  if (x > 88.72283935546875f) return bits_f32(0x7F800000u);
  if (x < -103.972084045410f) return 0.0f;
  const float fx = __builtin_floorf(x * 1.44269504088896341f + 0.5f);
  float r = x - fx * 0.693359375f;
  r = r - fx * -2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  p = p * r * r + r + 1.0f;
  // 2^n in two steps so results down to the subnormal range stay correct
  const int n = (int)fx;
  const int n1 = n / 2;
  const int n2 = n - n1;
  return p * bits_f32((uint32_t)(n1 + 127) << 23) * bits_f32((uint32_t)(n2 + 127) << 23);
}

static inline void softmax_row_scalar(const float* in, float* out, int64_t cols) {
  float m = -__builtin_inff();
  bool nan = false;
  for (int64_t j = 0; j < cols; ++j) {
    const float v = in[j];
    nan |= (v != v);
    m = v > m ? v : m;
  }
  if (nan) m = __builtin_nanf("");
  float s = 0.0f;
  for (int64_t j = 0; j < cols; ++j) { const float e = exp_one(in[j] - m); out[j] = e; s += e; }
  const float inv = 1.0f / s;
  for (int64_t j = 0; j < cols; ++j) out[j] *= inv;
}
