#include "index/ivf_pq_fastscan.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace vigil::index {
namespace {

TEST(Pq4ScanTest, CodeWidthsAndTheirLimits) {
  EXPECT_TRUE(CheckIvfPqBits(8, 1024).ok());
  EXPECT_TRUE(CheckIvfPqBits(4, kIvfPq4MaxSubVectors).ok());
  Status wide = CheckIvfPqBits(4, kIvfPq4MaxSubVectors + 1);
  EXPECT_EQ(wide.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wide.message().find("at most 256 sub-vectors"), std::string::npos) << wide.ToString();
  for (uint32_t bits : {0u, 2u, 6u, 16u}) EXPECT_EQ(CheckIvfPqBits(bits, 8).code(), StatusCode::kInvalidArgument);
  IvfPqModel m;
  m.num_sub_vectors = 5;
  m.num_bits = 4;
  EXPECT_EQ(IvfPqCodeSize(m), 3u);
  m.num_bits = 8;
  EXPECT_EQ(IvfPqCodeSize(m), 5u);
}

TEST(Pq4ScanTest, PackingKeepsEveryRowAndCode) {
  IvfPqModel model;
  model.num_bits = 4;
  model.num_sub_vectors = 5;  // odd: padded to 6
  model.num_partitions = 3;
  std::mt19937 rng(3);
  std::vector<std::vector<int64_t>> ids(3);
  std::vector<std::vector<uint8_t>> codes(3);
  const std::vector<size_t> counts = {70, 0, 33};
  for (uint32_t l = 0; l < 3; ++l) {
    for (size_t i = 0; i < counts[l]; ++i) {
      ids[l].push_back(static_cast<int64_t>(MakeRowAddress(l + 1, static_cast<uint32_t>(i))));
      for (uint32_t b = 0; b < IvfPqCodeSize(model); ++b) codes[l].push_back(static_cast<uint8_t>(rng() & 0x0F0F0F));
    }
  }
  std::string bytes = EncodeIvfPqLists(IvfPqCodeSize(model), ids, codes);
  auto view = ParseIvfPqLists(bytes);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  PackedPq4Lists packed = PackedPq4Lists::Pack(model, *view);
  EXPECT_EQ(packed.padded_sub_vectors(), 6u);
  for (uint32_t l = 0; l < 3; ++l) {
    ASSERT_EQ(packed.Count(l), counts[l]);
    for (size_t i = 0; i < counts[l]; ++i) {
      EXPECT_EQ(packed.Row(l, i), static_cast<RowAddress>(ids[l][i]));
      for (uint32_t m = 0; m < 5; ++m) {
        ASSERT_EQ(packed.Code(l, i, m), Pq4Code(codes[l].data() + i * 3, m)) << l << " " << i << " " << m;
      }
      EXPECT_EQ(packed.Code(l, i, 5), 0);  // the padding sub-quantizer
      std::vector<float> table(6 * kPq4Ksub);
      for (size_t t = 0; t < table.size(); ++t) table[t] = static_cast<float>(t % 7) + 0.25f * static_cast<float>(t);
      float want = 0;
      for (uint32_t m = 0; m < 5; ++m) want += table[m * kPq4Ksub + packed.Code(l, i, m)];
      EXPECT_EQ(packed.TableDistance(l, i, 5, table.data()), want);
    }
  }
}

}  // namespace
}  // namespace vigil::index
