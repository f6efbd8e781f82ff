// The inner loops of vector search, each with an AVX2 version chosen at run time
// when the CPU has it and a portable loop that computes the same result (bit for
// bit where stated, so answers do not depend on the machine).
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vigil::index {

constexpr uint32_t kPq4BlockRows = 32;  // rows of one fast-scan block
constexpr uint32_t kPq4Ksub = 16;       // centroids per 4-bit sub-quantizer

// Chooses the portable loops even on CPUs with AVX2 (tests compare the two); returns the
// previous setting. Not for concurrent use with searches.
bool ForcePortableKernels(bool force);

// out[i] = squared L2 distance from `x` to row i of `rows` (n rows of dim floats), or
// minus their inner product when `negate_dot`. Float sums; the two versions may differ
// in the last bits.
void CentroidDistances(const float* x, const float* rows, size_t n, uint32_t dim, bool negate_dot, float* out);

// Squared L2 distance in double precision, summed in four interleaved partial sums
// (the same bits from both versions).
double SquaredL2(const float* a, const float* b, uint32_t dim);

// The least and greatest of 16 floats.
void MinMax16(const float* v, float* lo, float* hi);

// out[j] = round((v[j] - lo) * scale), at most 255, for 16 values >= lo.
void Quantize16(const float* v, float lo, float scale, uint8_t* out);

// Fast scan of one block of 32 rows of 4-bit codes (the layout of PackedPq4Lists):
// sums[i] = sum over m < m2 of lut[m * 16 + code(row i, m)]. Returns the rows whose
// sum is below `below` (bit i for row i; below <= 65536).
uint32_t ScanPq4Block(const uint8_t* block, const uint8_t* lut, uint32_t m2, uint32_t below,
                      uint16_t sums[kPq4BlockRows]);

}  // namespace vigil::index
