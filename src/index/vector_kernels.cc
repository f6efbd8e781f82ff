// AVX2 and portable versions of the search loops (see vector_kernels.h). The AVX2
// functions carry target attributes so the rest of the build stays baseline x86-64.
#include "index/vector_kernels.h"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>

namespace vigil::index {
namespace {

constexpr size_t kHalfBlock = kPq4BlockRows / 2;

std::atomic<bool> g_force_portable{false};

bool UseAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has && !g_force_portable.load(std::memory_order_relaxed);
}

// ---- portable ----

void CentroidDistancesPortable(const float* x, const float* rows, size_t n, uint32_t dim, bool negate_dot, float* out) {
  for (size_t r = 0; r < n; ++r) {
    const float* c = rows + r * dim;
    float acc = 0;
    if (negate_dot) {
      for (uint32_t i = 0; i < dim; ++i) acc -= x[i] * c[i];
    } else {
      for (uint32_t i = 0; i < dim; ++i) acc += (x[i] - c[i]) * (x[i] - c[i]);
    }
    out[r] = acc;
  }
}

double SquaredL2Portable(const float* a, const float* b, uint32_t dim) {
  double s[4] = {0, 0, 0, 0};
  uint32_t i = 0;
  for (; i + 4 <= dim; i += 4) {
    for (uint32_t j = 0; j < 4; ++j) {
      double d = static_cast<double>(a[i + j]) - b[i + j];
      s[j] += d * d;
    }
  }
  for (; i < dim; ++i) {
    double d = static_cast<double>(a[i]) - b[i];
    s[i % 4] += d * d;
  }
  return (s[0] + s[1]) + (s[2] + s[3]);
}

uint8_t QuantizeOne(float v, float lo, float scale) {
  return static_cast<uint8_t>(std::min(255, static_cast<int>((v - lo) * scale + 0.5f)));
}

uint32_t ScanPq4BlockPortable(const uint8_t* block, const uint8_t* lut, uint32_t m2, uint32_t below,
                              uint16_t sums[kPq4BlockRows]) {
  std::fill(sums, sums + kPq4BlockRows, 0);
  for (uint32_t m = 0; m < m2; ++m) {
    const uint8_t* codes = block + m * kHalfBlock;
    const uint8_t* table = lut + m * kPq4Ksub;
    for (size_t i = 0; i < kHalfBlock; ++i) {
      sums[i] = static_cast<uint16_t>(sums[i] + table[codes[i] & 0xF]);
      sums[i + kHalfBlock] = static_cast<uint16_t>(sums[i + kHalfBlock] + table[codes[i] >> 4]);
    }
  }
  uint32_t mask = 0;
  for (uint32_t i = 0; i < kPq4BlockRows; ++i) mask |= (sums[i] < below ? 1u : 0u) << i;
  return mask;
}

// ---- AVX2 ----

__attribute__((target("avx2"))) float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

__attribute__((target("avx2"))) void CentroidDistancesAvx2(const float* x, const float* rows, size_t n, uint32_t dim,
                                                           bool negate_dot, float* out) {
  for (size_t r = 0; r < n; ++r) {
    const float* c = rows + r * dim;
    __m256 acc = _mm256_setzero_ps();
    uint32_t i = 0;
    for (; i + 8 <= dim; i += 8) {
      __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(c + i);
      if (negate_dot) {
        acc = _mm256_sub_ps(acc, _mm256_mul_ps(a, b));
      } else {
        __m256 d = _mm256_sub_ps(a, b);
        acc = _mm256_add_ps(acc, _mm256_mul_ps(d, d));
      }
    }
    float tail = 0;
    for (; i < dim; ++i) tail += negate_dot ? -x[i] * c[i] : (x[i] - c[i]) * (x[i] - c[i]);
    out[r] = HorizontalSum(acc) + tail;
  }
}

__attribute__((target("avx2"))) double SquaredL2Avx2(const float* a, const float* b, uint32_t dim) {
  __m256d acc = _mm256_setzero_pd();  // lane j sums elements i with i % 4 == j, as the portable loop
  uint32_t i = 0;
  for (; i + 4 <= dim; i += 4) {
    __m256d d = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(a + i)), _mm256_cvtps_pd(_mm_loadu_ps(b + i)));
    acc = _mm256_add_pd(acc, _mm256_mul_pd(d, d));
  }
  alignas(32) double s[4];
  _mm256_store_pd(s, acc);
  for (; i < dim; ++i) {
    double d = static_cast<double>(a[i]) - b[i];
    s[i % 4] += d * d;
  }
  return (s[0] + s[1]) + (s[2] + s[3]);
}

__attribute__((target("avx2"))) __m128i FoldLanes(__m256i v) {
  return _mm_add_epi16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
}

// Bit i set where v's 16-bit lane i (unsigned) is <= limit.
__attribute__((target("avx2"))) uint32_t AtMost(__m128i v0, __m128i v1, __m128i limit) {
  __m128i le0 = _mm_cmpeq_epi16(_mm_min_epu16(v0, limit), v0);
  __m128i le1 = _mm_cmpeq_epi16(_mm_min_epu16(v1, limit), v1);
  return static_cast<uint32_t>(_mm_movemask_epi8(_mm_packs_epi16(le0, le1)));
}

__attribute__((target("avx2"))) uint32_t ScanPq4BlockAvx2(const uint8_t* block, const uint8_t* lut, uint32_t m2,
                                                          uint32_t below, uint16_t sums[kPq4BlockRows]) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  const __m256i low8 = _mm256_set1_epi16(0x00FF);
  __m256i even_lo = _mm256_setzero_si256(), odd_lo = even_lo, even_hi = even_lo, odd_hi = even_lo;
  for (uint32_t m = 0; m < m2; m += 2) {  // lane 0: sub-quantizer m, lane 1: m + 1
    __m256i codes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + m * kHalfBlock));
    __m256i table = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lut + m * kPq4Ksub));
    __m256i d_lo = _mm256_shuffle_epi8(table, _mm256_and_si256(codes, low4));                        // rows 0..15
    __m256i d_hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(codes, 4), low4));  // 16..31
    even_lo = _mm256_add_epi16(even_lo, _mm256_and_si256(d_lo, low8));
    odd_lo = _mm256_add_epi16(odd_lo, _mm256_srli_epi16(d_lo, 8));
    even_hi = _mm256_add_epi16(even_hi, _mm256_and_si256(d_hi, low8));
    odd_hi = _mm256_add_epi16(odd_hi, _mm256_srli_epi16(d_hi, 8));
  }
  __m128i e_lo = FoldLanes(even_lo), o_lo = FoldLanes(odd_lo), e_hi = FoldLanes(even_hi), o_hi = FoldLanes(odd_hi);
  __m128i rows[4] = {_mm_unpacklo_epi16(e_lo, o_lo), _mm_unpackhi_epi16(e_lo, o_lo), _mm_unpacklo_epi16(e_hi, o_hi),
                     _mm_unpackhi_epi16(e_hi, o_hi)};  // rows 0..7, 8..15, 16..23, 24..31
  for (int r = 0; r < 4; ++r) _mm_storeu_si128(reinterpret_cast<__m128i*>(sums) + r, rows[r]);
  if (below == 0) return 0;
  const __m128i limit = _mm_set1_epi16(static_cast<int16_t>(std::min<uint32_t>(below - 1, 0xFFFF)));
  return AtMost(rows[0], rows[1], limit) | (AtMost(rows[2], rows[3], limit) << 16);
}

__attribute__((target("avx2"))) void MinMax16Avx2(const float* v, float* lo, float* hi) {
  __m256 a = _mm256_loadu_ps(v), b = _mm256_loadu_ps(v + 8);
  __m256 mn = _mm256_min_ps(a, b), mx = _mm256_max_ps(a, b);
  __m128 m4 = _mm_min_ps(_mm256_castps256_ps128(mn), _mm256_extractf128_ps(mn, 1));
  __m128 x4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
  m4 = _mm_min_ps(m4, _mm_movehl_ps(m4, m4));
  x4 = _mm_max_ps(x4, _mm_movehl_ps(x4, x4));
  *lo = _mm_cvtss_f32(_mm_min_ss(m4, _mm_movehdup_ps(m4)));
  *hi = _mm_cvtss_f32(_mm_max_ss(x4, _mm_movehdup_ps(x4)));
}

__attribute__((target("avx2"))) void Quantize16Avx2(const float* v, float lo, float scale, uint8_t* out) {
  const __m256 l = _mm256_set1_ps(lo), s = _mm256_set1_ps(scale), half = _mm256_set1_ps(0.5f);
  __m256i a = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v), l), s), half));
  __m256i b = _mm256_cvttps_epi32(_mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v + 8), l), s), half));
  // Saturating packs keep values in [0, 255] as the portable min(255, .) does (inputs >= 0).
  __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  __m128i x = _mm_packs_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_packus_epi16(w, x));
}

}  // namespace

bool ForcePortableKernels(bool force) { return g_force_portable.exchange(force); }

void CentroidDistances(const float* x, const float* rows, size_t n, uint32_t dim, bool negate_dot, float* out) {
  if (UseAvx2()) return CentroidDistancesAvx2(x, rows, n, dim, negate_dot, out);
  CentroidDistancesPortable(x, rows, n, dim, negate_dot, out);
}

double SquaredL2(const float* a, const float* b, uint32_t dim) {
  return UseAvx2() ? SquaredL2Avx2(a, b, dim) : SquaredL2Portable(a, b, dim);
}

void MinMax16(const float* v, float* lo, float* hi) {
  if (UseAvx2()) return MinMax16Avx2(v, lo, hi);
  *lo = *hi = v[0];
  for (uint32_t j = 1; j < kPq4Ksub; ++j) {
    *lo = std::min(*lo, v[j]);
    *hi = std::max(*hi, v[j]);
  }
}

void Quantize16(const float* v, float lo, float scale, uint8_t* out) {
  if (UseAvx2()) return Quantize16Avx2(v, lo, scale, out);
  for (uint32_t j = 0; j < kPq4Ksub; ++j) out[j] = QuantizeOne(v[j], lo, scale);
}

uint32_t ScanPq4Block(const uint8_t* block, const uint8_t* lut, uint32_t m2, uint32_t below,
                      uint16_t sums[kPq4BlockRows]) {
  if (UseAvx2()) return ScanPq4BlockAvx2(block, lut, m2, below, sums);
  return ScanPq4BlockPortable(block, lut, m2, below, sums);
}

}  // namespace vigil::index
