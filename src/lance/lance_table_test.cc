// The pure parts of external Lance tables: the location allowlist, the column checks
// of admission, the runner request of each job, and what a dataset's history proves
// about an attempt whose outcome was lost.
#include "vigil/lance/lance_table.h"

#include <gtest/gtest.h>

#include "vigil/lance/lance_job.h"

namespace vigil::lance {
namespace {

std::vector<LanceField> Fields() {
  return {{"id", "Float64", false}, {"body", "Utf8", false},  {"vector", "FixedSizeList[16]<Float32>", false},
          {"flag", "Bool", false},  {"maybe", "Int64", true}, {"wide", "FixedSizeList[16]<Float64>", false}};
}

LanceVersion Version(int64_t v, std::vector<LanceIndex> indexes, int64_t rows = 2000) {
  LanceVersion out;
  out.version = v;
  out.fields = Fields();
  out.indexes = std::move(indexes);
  out.data = {rows, rows * 90, 1};
  return out;
}

LanceIndex Index(const std::string& name, const std::string& uuid, const std::string& type = "BTREE",
                 const std::string& column = "id") {
  return {name, uuid, type, {column}, 2000, 0};
}

index::JobRequest Job(index::JobOperation op, const std::string& name = "b") {
  index::JobRequest j;
  j.operation = op;
  j.engine = index::TableEngine::kLance;
  j.locator = "/data/docs.lance";
  j.index_name = name;
  j.columns = {"id"};
  j.physical_type = op == index::JobOperation::kDrop ? "" : "BTREE";
  j.start_version = 3;
  return j;
}

TEST(LanceLocationTest, OnlyAbsoluteAllowlistedDatasetPaths) {
  EXPECT_TRUE(ValidateLocation("/data/docs.lance").ok());
  EXPECT_TRUE(ValidateLocation("/srv/lance-db/v1.2/my_table.lance").ok());
  for (const char* bad : {"data/docs.lance", "/data/docs", "/data/../etc/docs.lance", "/data/./docs.lance",
                          "/data/do cs.lance", "/data/docs.lance/", "/data/$(x).lance", "/data/.lance", ""}) {
    Status st = ValidateLocation(bad);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(LanceColumnsTest, EachIndexTypeNeedsItsKindOfColumn) {
  EXPECT_TRUE(CheckIndexable(Fields(), "vector", index::IndexType::kIvfPq).ok());
  EXPECT_TRUE(CheckIndexable(Fields(), "body", index::IndexType::kFts).ok());
  EXPECT_TRUE(CheckIndexable(Fields(), "id", index::IndexType::kBtree).ok());
  EXPECT_TRUE(CheckIndexable(Fields(), "body", index::IndexType::kBitmap).ok());
  Status st = CheckIndexable(Fields(), "id", index::IndexType::kIvfPq);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("'id' is Float64"), std::string::npos) << st.ToString();
  EXPECT_EQ(CheckIndexable(Fields(), "vector", index::IndexType::kBtree).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckIndexable(Fields(), "id", index::IndexType::kFts).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckIndexable(Fields(), "nope", index::IndexType::kBtree).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(VectorDimension("FixedSizeList[128]<Float32>"), 128);
  EXPECT_EQ(VectorDimension("FixedSizeList[8]<Int32>"), std::nullopt);
  EXPECT_EQ(VectorDimension("FixedSizeList[8]<Float64>"), std::nullopt);
}

// Seed 000 section 2.3: BITMAP takes no floats, BTREE no booleans; nullable columns and
// Float64 vectors are refused.
TEST(LanceColumnsTest, TheTypeMatrixOfSection23) {
  EXPECT_TRUE(CheckIndexable(Fields(), "flag", index::IndexType::kBitmap).ok());
  EXPECT_EQ(CheckIndexable(Fields(), "id", index::IndexType::kBitmap).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckIndexable(Fields(), "flag", index::IndexType::kBtree).code(), StatusCode::kInvalidArgument);
  Status nullable = CheckIndexable(Fields(), "maybe", index::IndexType::kBtree);
  EXPECT_NE(nullable.message().find("needs a NOT NULL column; Lance column 'maybe' is nullable"), std::string::npos)
      << nullable.ToString();
  EXPECT_EQ(CheckIndexable(Fields(), "wide", index::IndexType::kIvfPq).code(), StatusCode::kInvalidArgument);
}

TEST(LanceSchemaTest, FingerprintFollowsNamesTypesNullabilityAndOrder) {
  std::vector<LanceField> f = Fields();
  const std::string base = SchemaFingerprint(f);
  EXPECT_EQ(base, SchemaFingerprint(Fields()));
  f[0].nullable = true;
  EXPECT_NE(SchemaFingerprint(f), base);
  f = Fields();
  std::swap(f[0], f[1]);
  EXPECT_NE(SchemaFingerprint(f), base);
  f = Fields();
  f[2].type = "FixedSizeList[32]<Float32>";
  EXPECT_NE(SchemaFingerprint(f), base);
}

TEST(LanceJobTest, EachOperationIsOneRunnerRequestAtTheAdmittedVersion) {
  index::JobRequest create = Job(index::JobOperation::kCreate);
  create.physical_type = "IVF_PQ";
  create.columns = {"vector"};
  create.properties_json = R"({"metric":"cosine","num_partitions":"8"})";
  Result<nlohmann::json> r = LanceRequest(create);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ((*r)["op"], "create_index");
  EXPECT_EQ((*r)["replace"], false);
  EXPECT_EQ((*r)["expected_version"], 3);
  EXPECT_EQ((*r)["column"], "vector");
  EXPECT_EQ((*r)["properties"]["num_partitions"], "8");
  EXPECT_EQ((*LanceRequest(Job(index::JobOperation::kReplace)))["replace"], true);
  EXPECT_EQ((*LanceRequest(Job(index::JobOperation::kDrop)))["op"], "drop_index");
  EXPECT_EQ((*LanceRequest(Job(index::JobOperation::kBuild)))["op"], "optimize_index");
  index::JobRequest bad = Job(index::JobOperation::kCreate);
  bad.properties_json = "[1]";
  EXPECT_EQ(LanceRequest(bad).status().code(), StatusCode::kInvalidArgument);
}

TEST(LanceAttributionTest, NoLaterVersionProvesNothingWasCommitted) {
  Attribution a = Attribute(Job(index::JobOperation::kCreate), {Version(3, {})});
  EXPECT_EQ(a.evidence, Evidence::kNotCommitted) << a.reason;
  EXPECT_EQ(Attribute(Job(index::JobOperation::kBuild), {Version(3, {Index("b", "u1")})}).evidence,
            Evidence::kNotCommitted);
}

// Seed 000's non-goal "attribution from a matching metadata postcondition": a later version
// holding exactly the requested change may be an outside writer's identical change.
TEST(LanceAttributionTest, AMatchingLaterVersionIsNeverTakenAsTheCommit) {
  const LanceVersion base = Version(3, {Index("b", "u1"), Index("other", "u9", "BITMAP", "body")});
  for (const auto& [op, next] : std::vector<std::pair<index::JobOperation, LanceVersion>>{
           {index::JobOperation::kCreate, Version(4, {Index("c", "u2"), Index("other", "u9", "BITMAP", "body")})},
           {index::JobOperation::kReplace, Version(4, {Index("b", "u2"), Index("other", "u9", "BITMAP", "body")})},
           {index::JobOperation::kDrop, Version(4, {Index("other", "u9", "BITMAP", "body")})},
           {index::JobOperation::kBuild, Version(4, {Index("b", "u3"), Index("other", "u9", "BITMAP", "body")})}}) {
    Attribution a = Attribute(Job(op, op == index::JobOperation::kCreate ? "c" : "b"), {base, next});
    EXPECT_EQ(a.evidence, Evidence::kUnproven) << static_cast<int>(op);
    EXPECT_NE(a.reason.find("binds it to this attempt"), std::string::npos) << a.reason;
  }
}

TEST(LanceAttributionTest, AGapOrAMissingAdmittedVersionIsUnproven) {
  const index::JobRequest create = Job(index::JobOperation::kCreate);
  LanceVersion gap;
  gap.version = 4;
  gap.missing = true;
  EXPECT_EQ(Attribute(create, {Version(3, {}), gap}).evidence, Evidence::kUnproven);
  EXPECT_EQ(Attribute(create, {Version(4, {Index("b", "u1")})}).evidence, Evidence::kUnproven);
  LanceVersion base_gone;
  base_gone.version = 3;
  base_gone.missing = true;
  EXPECT_EQ(Attribute(create, {base_gone}).evidence, Evidence::kUnproven);
}

}  // namespace
}  // namespace vigil::lance
