#include "index/vector_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace vigil::index {
namespace {

// Runs `fn` once with the kernels the CPU allows and once with the portable loops.
template <typename Fn>
auto BothWays(Fn fn) {
  bool was = ForcePortableKernels(false);
  auto fast = fn();
  ForcePortableKernels(true);
  auto portable = fn();
  ForcePortableKernels(was);
  return std::make_pair(fast, portable);
}

TEST(VectorKernelsTest, FastScanSumsAndMasksEqualThePortableLoop) {
  std::mt19937 rng(7);
  for (uint32_t m2 : {2u, 4u, 16u, 64u, 256u}) {
    std::vector<uint8_t> block(m2 * kPq4BlockRows / 2), lut(m2 * kPq4Ksub);
    for (int round = 0; round < 20; ++round) {
      for (auto& b : block) b = static_cast<uint8_t>(rng());
      for (auto& v : lut) v = static_cast<uint8_t>(round == 0 ? 255 : rng());  // round 0: the largest sums
      const uint32_t below = round == 0 ? 65536 : static_cast<uint32_t>(rng() % (m2 * 255 + 2));
      auto [fast, portable] = BothWays([&] {
        std::vector<uint16_t> sums(kPq4BlockRows);
        uint32_t mask = ScanPq4Block(block.data(), lut.data(), m2, below, sums.data());
        return std::make_pair(sums, mask);
      });
      ASSERT_EQ(fast, portable) << "m2 " << m2 << " round " << round;
      const auto& [sums, mask] = portable;
      for (uint32_t i = 0; i < kPq4BlockRows; ++i) {
        if (round == 0) {
          ASSERT_EQ(sums[i], 255u * m2);
        }
        ASSERT_EQ((mask >> i) & 1, sums[i] < below ? 1u : 0u) << i;
      }
      // Row 17's sum by hand: high nibbles of byte 1 of each sub-quantizer's 16 bytes.
      uint32_t want = 0;
      for (uint32_t m = 0; m < m2; ++m) want += lut[m * kPq4Ksub + (block[m * 16 + 1] >> 4)];
      ASSERT_EQ(sums[17], want);
    }
  }
  uint16_t sums[kPq4BlockRows];
  std::vector<uint8_t> zeros(16 * 4);
  EXPECT_EQ(ScanPq4Block(zeros.data(), zeros.data(), 4, 0, sums), 0u);  // nothing is below 0
  EXPECT_EQ(ScanPq4Block(zeros.data(), zeros.data(), 4, 1, sums), 0xFFFFFFFFu);
}

TEST(VectorKernelsTest, DistancesAndTablesAgreeWithThePortableLoops) {
  std::mt19937 rng(11);
  std::normal_distribution<float> g;
  for (uint32_t dim : {1u, 3u, 8u, 13u, 128u}) {
    std::vector<float> x(dim), rows(7 * dim);
    for (auto& v : x) v = g(rng);
    for (auto& v : rows) v = g(rng);
    for (bool dot : {false, true}) {
      auto [fast, portable] = BothWays([&] {
        std::vector<float> out(7);
        CentroidDistances(x.data(), rows.data(), 7, dim, dot, out.data());
        return out;
      });
      for (size_t r = 0; r < 7; ++r) {
        double want = 0;
        for (uint32_t i = 0; i < dim; ++i) {
          want += dot ? -double{x[i]} * rows[r * dim + i] : std::pow(double{x[i]} - rows[r * dim + i], 2);
        }
        EXPECT_NEAR(fast[r], want, 1e-4 * (1 + std::fabs(want)));
        EXPECT_NEAR(portable[r], want, 1e-4 * (1 + std::fabs(want)));
      }
    }
    auto [fast, portable] = BothWays([&] { return SquaredL2(x.data(), rows.data(), dim); });
    EXPECT_EQ(fast, portable) << dim;  // the same bits
  }
  std::vector<float> v(16);
  for (auto& f : v) f = g(rng);
  v[5] = -7;
  v[12] = 9;
  auto [fast, portable] = BothWays([&] {
    float lo = 0, hi = 0;
    MinMax16(v.data(), &lo, &hi);
    std::vector<uint8_t> q(16);
    Quantize16(v.data(), lo, 255.0f / (hi - lo), q.data());
    return std::make_tuple(lo, hi, q);
  });
  EXPECT_EQ(fast, portable);
  EXPECT_EQ(std::get<0>(portable), -7);
  EXPECT_EQ(std::get<1>(portable), 9);
  EXPECT_EQ(std::get<2>(portable)[5], 0);
  EXPECT_EQ(std::get<2>(portable)[12], 255);
}

}  // namespace
}  // namespace vigil::index
