#include "vigil/storage/deletion.h"

#include <gtest/gtest.h>

#include <cstring>

#include "vigil/common/checksum.h"

namespace vigil {
namespace {

// A deletion file around `payload` with a valid checksum.
std::string Seal(std::string_view payload) {
  std::string out = "VGLDEL01";
  out += payload;
  uint64_t sum = Checksum64(out);
  out.append(reinterpret_cast<const char*>(&sum), 8);
  return out;
}

DeletionVector Mixed() {
  DeletionVector dv;
  for (uint32_t i = 0; i < 50; ++i) dv.Add(i * 3);          // array container
  for (uint32_t i = 70000; i < 80000; ++i) dv.Add(i);       // run container
  for (uint32_t i = 200000; i < 260000; i += 2) dv.Add(i);  // bitset container
  dv.Add(4000000000u);
  return dv;
}

TEST(DeletionVectorTest, RoundTrips) {
  for (const DeletionVector& dv : {DeletionVector(), Mixed()}) {
    std::string bytes = dv.Encode();
    auto back = DeletionVector::Decode(bytes);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->Cardinality(), dv.Cardinality());
    EXPECT_TRUE(back->bits() == dv.bits());
    EXPECT_EQ(back->Encode(), bytes);  // deterministic
  }
  auto back = *DeletionVector::Decode(Mixed().Encode());
  EXPECT_TRUE(back.Contains(3));
  EXPECT_FALSE(back.Contains(4));
  EXPECT_TRUE(back.Contains(79999));
  EXPECT_TRUE(back.Contains(4000000000u));
}

TEST(DeletionVectorTest, UnionHoldsBoth) {
  DeletionVector a, b;
  a.Add(1);
  b.Add(2);
  a.Union(b);
  EXPECT_EQ(a.Cardinality(), 2u);
  EXPECT_TRUE(a.Contains(2));
}

TEST(DeletionVectorTest, EveryByteFlipIsCorruption) {
  const std::string good = Mixed().Encode();
  DeletionVector small;
  small.Add(7);
  small.Add(100000);
  for (const std::string& bytes : {good, small.Encode()}) {
    for (size_t i = 0; i < bytes.size(); ++i) {
      for (uint8_t mask : {0x01, 0x80}) {
        std::string bad = bytes;
        bad[i] = static_cast<char>(bad[i] ^ mask);
        ASSERT_EQ(DeletionVector::Decode(bad).status().code(), StatusCode::kCorruption) << "byte " << i;
      }
    }
  }
}

TEST(DeletionVectorTest, EveryTruncationIsCorruption) {
  const std::string good = Mixed().Encode();
  for (size_t n = 0; n < good.size(); ++n) {
    ASSERT_EQ(DeletionVector::Decode(good.substr(0, n)).status().code(), StatusCode::kCorruption) << n;
  }
}

// Forged checksums must still not reach CRoaring with a bad layout.
TEST(DeletionVectorTest, BadLayoutUnderValidChecksumIsCorruption) {
  const std::string good = Mixed().Encode();
  const std::string payload = good.substr(8, good.size() - 16);
  EXPECT_TRUE(DeletionVector::Decode(Seal(payload)).ok());
  EXPECT_EQ(DeletionVector::Decode(Seal(payload + "x")).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DeletionVector::Decode(Seal(payload.substr(0, payload.size() - 1))).status().code(),
            StatusCode::kCorruption);
  EXPECT_EQ(DeletionVector::Decode(Seal("")).status().code(), StatusCode::kCorruption);

  // No-run cookie, one array container {5, 3}: values out of order.
  std::string unsorted;
  auto put32 = [&](uint32_t v) { unsorted.append(reinterpret_cast<const char*>(&v), 4); };
  auto put16 = [&](uint16_t v) { unsorted.append(reinterpret_cast<const char*>(&v), 2); };
  put32(12346), put32(1), put16(0), put16(1), put32(16), put16(5), put16(3);
  Status st = DeletionVector::Decode(Seal(unsorted)).status();
  EXPECT_EQ(st.code(), StatusCode::kCorruption);
  EXPECT_NE(st.message().find("increasing"), std::string::npos) << st.ToString();

  // Run cookie, one run container whose run passes 65535.
  std::string overflow;
  auto p32 = [&](uint32_t v) { overflow.append(reinterpret_cast<const char*>(&v), 4); };
  auto p16 = [&](uint16_t v) { overflow.append(reinterpret_cast<const char*>(&v), 2); };
  p32(12347);                  // one container, runs
  overflow.push_back(1);       // container 0 is a run container
  p16(0), p16(9);              // key 0, cardinality 10
  p16(1), p16(65530), p16(9);  // one run [65530, +9]
  EXPECT_EQ(DeletionVector::Decode(Seal(overflow)).status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace vigil
