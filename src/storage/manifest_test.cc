#include "vigil/storage/manifest.h"
#include "vigil/storage/filename.h"

#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "vigil/common/bounds.h"
#include "vigil/common/checksum.h"

namespace vigil {
namespace {

using nlohmann::json;

Manifest Sample() {
  Manifest m;
  m.version = 7;
  m.parent_version = 6;
  m.dataset_id = *Uuid::Parse("3f1e0c2a-8b7d-4c1e-9a2b-0d4e5f607182");
  m.schema = *Schema::Make({{-1, "id", DataType::Of(TypeId::kInt64), false},
                            {-1, "emb", DataType::Vector(VectorElement::kFloat32, 8), true}});
  FragmentMeta a{0, "data/a.frag", 100, 4096, 0x0123456789abcdefULL, std::nullopt};
  FragmentMeta b{3, "data/b.frag", 50, 2048, 0xfedcba9876543210ULL, DeletionFileRef{"_deletions/3-7.del", 5, 42}};
  m.fragments = {a, b};
  m.next_fragment_id = 4;
  IndexSegmentMeta s;
  s.name = "emb_idx";
  s.uuid = *Uuid::Parse("00000000-0000-4000-8000-000000000001");
  s.field_ids = {1};
  s.index_type = "IVF_PQ";
  s.properties_json = R"({"metric":"l2"})";
  s.built_at_version = 5;
  s.covered_fragments = {0, 3};
  s.files = {{"index.bin", 123, 99}, {"centroids.bin", 456, 100}};
  m.segments = {s};
  m.txn.operation = "CREATE_INDEX";
  m.txn.job_id = 42;
  m.txn.attempt_id = "att-1";
  m.txn.idempotency_key = "key-1";
  m.txn.timestamp_micros = 1700000000000000;
  m.txn.extra = {{"user", "alice"}, {"note", "x"}};
  return m;
}

// A manifest file around `payload` with valid framing and checksum.
std::string Frame(const std::string& payload) {
  std::string out = "VGLMANI1";
  uint32_t n = static_cast<uint32_t>(payload.size());
  out.append(reinterpret_cast<const char*>(&n), 4);
  out += payload;
  uint64_t sum = Checksum64(payload);
  out.append(reinterpret_cast<const char*>(&sum), 8);
  return out;
}

json SamplePayload() {
  std::string bytes = EncodeManifest(Sample());
  return json::parse(bytes.substr(12, bytes.size() - 20));
}

TEST(ManifestTest, RoundTripsEveryField) {
  const Manifest m = Sample();
  const std::string bytes = EncodeManifest(m);
  auto back = DecodeManifest(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->version, 7u);
  EXPECT_EQ(back->parent_version, 6u);
  EXPECT_EQ(back->dataset_id, m.dataset_id);
  EXPECT_EQ(back->schema->fingerprint(), m.schema->fingerprint());
  ASSERT_EQ(back->fragments.size(), 2u);
  EXPECT_EQ(back->fragments[1].path, "data/b.frag");
  EXPECT_EQ(back->fragments[0].footer_checksum, 0x0123456789abcdefULL);
  EXPECT_FALSE(back->fragments[0].deletion.has_value());
  ASSERT_TRUE(back->fragments[1].deletion.has_value());
  EXPECT_EQ(back->fragments[1].deletion->num_deleted, 5u);
  EXPECT_EQ(back->fragments[1].deletion->checksum, 42u);
  EXPECT_EQ(back->next_fragment_id, 4u);
  ASSERT_EQ(back->segments.size(), 1u);
  const IndexSegmentMeta& s = back->segments[0];
  EXPECT_EQ(s.uuid, m.segments[0].uuid);
  EXPECT_EQ(s.covered_fragments, (std::vector<uint32_t>{0, 3}));
  EXPECT_EQ(s.field_ids, (std::vector<int32_t>{1}));
  EXPECT_EQ(s.properties_json, m.segments[0].properties_json);
  ASSERT_EQ(s.files.size(), 2u);
  EXPECT_EQ(s.files[1].name, "centroids.bin");
  EXPECT_EQ(s.files[1].checksum, 100u);
  EXPECT_EQ(back->txn.job_id, std::optional<int64_t>(42));
  EXPECT_EQ(back->txn.extra, m.txn.extra);
  EXPECT_EQ(back->txn.timestamp_micros, m.txn.timestamp_micros);
  EXPECT_EQ(EncodeManifest(*back), bytes);  // deterministic
  EXPECT_EQ(EncodeManifest(m), bytes);
}

TEST(ManifestTest, FindFragmentAndLiveRows) {
  const Manifest m = Sample();
  ASSERT_NE(m.FindFragment(3), nullptr);
  EXPECT_EQ(m.FindFragment(3)->path, "data/b.frag");
  EXPECT_EQ(m.FindFragment(1), nullptr);
  EXPECT_EQ(m.FindFragment(99), nullptr);
  EXPECT_EQ(m.CountLiveRows(), 100u + 45u);
}

TEST(ManifestTest, NamesAndPaths) {
  EXPECT_EQ(ManifestPath(12), "_versions/12.manifest");
  EXPECT_EQ(ParseManifestName("12.manifest"), std::optional<uint64_t>(12));
  EXPECT_EQ(ParseManifestName("18446744073709551615.manifest"), std::optional<uint64_t>(UINT64_MAX));
  for (const char* bad : {"18446744073709551616.manifest", "012.manifest", ".manifest", "12.manifest.tmp",
                          "-1.manifest", "1a.manifest", "12.manifes", "x"}) {
    EXPECT_FALSE(ParseManifestName(bad).has_value()) << bad;
  }
}

TEST(ManifestTest, EveryByteFlipIsCorruption) {
  Manifest m = Sample();
  m.segments.clear();
  const std::string good = EncodeManifest(m);
  for (size_t i = 0; i < good.size(); ++i) {
    for (uint8_t mask : {0x01, 0x80}) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      ASSERT_EQ(DecodeManifest(bad).status().code(), StatusCode::kCorruption) << "byte " << i;
    }
  }
}

TEST(ManifestTest, EveryTruncationIsCorruption) {
  const std::string good = EncodeManifest(Sample());
  for (size_t n = 0; n < good.size(); ++n) {
    Status st = DecodeManifest(good.substr(0, n), "v7").status();
    ASSERT_EQ(st.code(), StatusCode::kCorruption) << n;
    ASSERT_EQ(st.message().rfind("v7: ", 0), 0u) << st.message();
  }
  EXPECT_EQ(DecodeManifest(good + "x").status().code(), StatusCode::kCorruption);
}

TEST(ManifestTest, OversizedLengthIsRejectedWithoutReading) {
  std::string bytes = "VGLMANI1";
  uint32_t n = UINT32_MAX;
  bytes.append(reinterpret_cast<const char*>(&n), 4);
  bytes.append(8, '\0');
  EXPECT_EQ(DecodeManifest(bytes).status().code(), StatusCode::kCorruption);
}

// Decoding `payload` (validly framed) fails with Corruption naming `field`.
void ExpectFieldError(const json& payload, const std::string& field) {
  Status st = DecodeManifest(Frame(payload.dump())).status();
  EXPECT_EQ(st.code(), StatusCode::kCorruption) << field;
  EXPECT_NE(st.message().find("'" + field + "'"), std::string::npos) << st.ToString();
}

TEST(ManifestTest, MissingOrMistypedFieldsAreNamed) {
  ASSERT_TRUE(DecodeManifest(Frame(SamplePayload().dump())).ok());
  struct Case {
    json::json_pointer ptr;
    std::string name;
  };
  const std::vector<Case> cases = {
      {json::json_pointer("/version"), "version"},
      {json::json_pointer("/dataset_id"), "dataset_id"},
      {json::json_pointer("/schema"), "schema"},
      {json::json_pointer("/fragments/1/num_rows"), "fragments[1].num_rows"},
      {json::json_pointer("/fragments/1/deletion/checksum"), "fragments[1].deletion.checksum"},
      {json::json_pointer("/segments/0/uuid"), "segments[0].uuid"},
      {json::json_pointer("/segments/0/files/1/size"), "segments[0].files[1].size"},
      {json::json_pointer("/txn/timestamp_micros"), "txn.timestamp_micros"},
      {json::json_pointer("/txn/extra"), "txn.extra"},
  };
  for (const Case& c : cases) {
    json missing = SamplePayload();
    missing[c.ptr.parent_pointer()].erase(c.ptr.back());
    ExpectFieldError(missing, c.name);
    json mistyped = SamplePayload();
    mistyped[c.ptr] = json::array({true});
    ExpectFieldError(mistyped, c.name);
  }
}

TEST(ManifestTest, InvariantsAreChecked) {
  json p = SamplePayload();
  std::swap(p["fragments"][0], p["fragments"][1]);
  ExpectFieldError(p, "fragments");

  p = SamplePayload();
  p["segments"][0]["covered_fragments"] = json::array({3, 3});
  ExpectFieldError(p, "segments[0].covered_fragments");

  p = SamplePayload();
  p["fragments"][1]["deletion"]["num_deleted"] = 51;
  ExpectFieldError(p, "fragments[1].deletion.num_deleted");

  p = SamplePayload();
  p["fragments"][0]["footer_checksum"] = "0123456789ABCDEF";
  ExpectFieldError(p, "fragments[0].footer_checksum");

  p = SamplePayload();
  p["fragments"][0]["path"] = "../../etc/passwd";
  ExpectFieldError(p, "fragments[0].path");

  p = SamplePayload();
  p["next_fragment_id"] = 3;
  ExpectFieldError(p, "next_fragment_id");

  p = SamplePayload();
  p["parent_version"] = 7;
  ExpectFieldError(p, "parent_version");

  p = SamplePayload();
  p["fragments"][0]["num_rows"] = -1;
  ExpectFieldError(p, "fragments[0].num_rows");

  p = SamplePayload();
  p["segments"][0]["properties_json"] = std::string(bounds::kMaxPropertiesJsonBytes + 1, 'x');
  ExpectFieldError(p, "segments[0].properties_json");

  p = SamplePayload();
  p["format"] = 2;
  ExpectFieldError(p, "format");
}

TEST(ManifestTest, NonJsonPayloadIsCorruption) {
  for (const char* payload : {"", "{", "[1,2]", "null", "{\"version\": 1e999}", "\xff\xfe"}) {
    EXPECT_EQ(DecodeManifest(Frame(payload)).status().code(), StatusCode::kCorruption) << payload;
  }
}

}  // namespace
}  // namespace vigil
