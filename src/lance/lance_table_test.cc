// The pure parts of external Lance tables: the location allowlist, the column checks
// of admission, the runner request of each job, and what a dataset's history proves
// about an attempt whose outcome was lost.
#include "vigil/lance/lance_table.h"

#include <gtest/gtest.h>

#include "vigil/lance/lance_job.h"

namespace vigil::lance {
namespace {

std::vector<LanceField> Fields() {
  // As the runner reads a Lance vector column: its elements nullable in the schema (Lance
  // cannot say otherwise), none of them null in the data.
  return {{"id", "Float64", false},
          {"body", "Utf8", false},
          {"vector", "FixedSizeList[16]<Float32>", false, true, 0},
          {"flag", "Bool", false},
          {"maybe", "Int64", true},
          {"wide", "FixedSizeList[16]<Float64>", false, true, std::nullopt}};
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

// Seed 000 section 2.3: IVF_PQ needs a fixed-size list of non-null elements. Lance's schema
// reports every vector's elements nullable, so the runner's count of null ones decides.
TEST(LanceColumnsTest, IvfPqNeedsNonNullElements) {
  std::vector<LanceField> f = Fields();
  EXPECT_TRUE(CheckIndexable(f, "vector", index::IndexType::kIvfPq).ok());
  f[2].null_elements = 7;
  Status st = CheckIndexable(f, "vector", index::IndexType::kIvfPq);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("USING IVF_PQ needs non-null Float16 or Float32 elements; Lance column 'vector' holds 7 "
                              "null elements"),
            std::string::npos)
      << st.ToString();
  f[2].null_elements = std::nullopt;  // not counted: refused, never assumed non-null
  st = CheckIndexable(f, "vector", index::IndexType::kIvfPq);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("the elements of Lance column 'vector' may be null and were not counted"),
            std::string::npos)
      << st.ToString();
  f[2].element_nullable = false;  // a schema that declares them non-null needs no count
  EXPECT_TRUE(CheckIndexable(f, "vector", index::IndexType::kIvfPq).ok());
  // Other index types do not look at elements.
  f = Fields();
  f[2].null_elements = 7;
  f.push_back({"tags", "List<Utf8>", false, true, std::nullopt});
  EXPECT_TRUE(CheckIndexable(f, "id", index::IndexType::kBtree).ok());
}

LanceEntry Entry(const std::string& name, const std::string& uuid, std::vector<int32_t> ids = {0},
                 std::vector<std::optional<std::string>> columns = {"id"}, int64_t covers = 1,
                 const std::string& type_url = "/lance.table.BTreeIndexDetails") {
  return {name, uuid, std::move(ids), std::move(columns), covers, type_url};
}

LanceSnapshot Listed(std::vector<LanceIndex> indexes, std::vector<LanceEntry> entries) {
  LanceSnapshot s;
  s.version = 5;
  s.fields = Fields();
  for (LanceIndex& ix : indexes) {
    ix.type_url = "/lance.table.BTreeIndexDetails";
    ix.segments = 1;
  }
  s.indexes = std::move(indexes);
  s.entries = std::move(entries);
  return s;
}

std::vector<std::string> Names(const std::vector<LanceConsistency>& cs) {
  std::vector<std::string> out;
  for (LanceConsistency c : cs) out.emplace_back(LanceConsistencyName(c));
  return out;
}

void ExpectInconsistent(const LanceSnapshot& s, const std::string& words) {
  Status st = CheckLogicalMetadata(s);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
  EXPECT_EQ(st.message().rfind("LANCE_INDEX_METADATA_INCONSISTENT: ", 0), 0u) << st.ToString();
  EXPECT_NE(st.message().find(words), std::string::npos) << st.ToString();
}

// Seed 000 section 4.1: logical inspection fails, never merging or dropping, when the manifest's
// entries and LanceDB's listing disagree; the physical view shows each entry's join.
TEST(LanceMetadataTest, LogicalInspectionFailsOnInconsistentEntries) {
  const LanceSnapshot ok = Listed({Index("b", "u1"), Index("c", "u2", "BITMAP", "body")},
                                  {Entry("b", "u1"), Entry("c", "u2", {1}, {"body"})});
  EXPECT_TRUE(CheckLogicalMetadata(ok).ok());
  EXPECT_EQ(Names(EntryConsistency(ok)), (std::vector<std::string>{"CONSISTENT", "CONSISTENT"}));

  // A field that does not resolve (LanceDB leaves such an entry out of its listing).
  LanceSnapshot s = Listed({Index("c", "u2", "BITMAP", "body")},
                           {Entry("b", "u1", {9}, {std::nullopt}), Entry("c", "u2", {1}, {"body"})});
  EXPECT_EQ(Names(EntryConsistency(s)), (std::vector<std::string>{"MISMATCH", "CONSISTENT"}));
  ExpectInconsistent(s, "entry u1 of index 'b' has field id 9, which no field of version 5 has");

  // One UUID under two names: both entries are MISMATCH.
  s = Listed({Index("b", "u1"), Index("c", "u1", "BITMAP", "body")},
             {Entry("b", "u1"), Entry("c", "u1", {1}, {"body"})});
  EXPECT_EQ(Names(EntryConsistency(s)), (std::vector<std::string>{"MISMATCH", "MISMATCH"}));
  ExpectInconsistent(s, "has a UUID that also belongs to index 'c'");

  // An entry of a name LanceDB does not list.
  s = Listed({Index("b", "u1")}, {Entry("b", "u1"), Entry("gone", "u7")});
  EXPECT_EQ(Names(EntryConsistency(s)), (std::vector<std::string>{"CONSISTENT", "ORPHAN"}));
  ExpectInconsistent(s, "entry u7 of index 'gone' belongs to no index LanceDB lists");

  // Entries of one name that disagree on fields, or on type.
  s = Listed({Index("b", "u1")}, {Entry("b", "u1"), Entry("b", "u2", {1}, {"body"})});
  s.indexes[0].segments = 2;
  EXPECT_EQ(Names(EntryConsistency(s)), (std::vector<std::string>{"CONSISTENT", "MISMATCH"}));
  ExpectInconsistent(s, "entry u2 of index 'b' disagrees with entry u1");
  s.entries[1] = Entry("b", "u2", {0}, {"id"}, 1, "/lance.table.BitmapIndexDetails");
  ExpectInconsistent(s, "entry u2 of index 'b' disagrees with entry u1");
  s.entries[1] = Entry("b", "u2");
  EXPECT_TRUE(CheckLogicalMetadata(s).ok());  // two agreeing entries: one logical index

  // A listed index whose entries are missing, or fewer than LanceDB counts.
  ExpectInconsistent(Listed({Index("b", "u1")}, {}), "index 'b' has no physical entry");
  ExpectInconsistent(Listed({Index("b", "u1")}, {Entry("b", "u3")}), "the UUID LanceDB lists for index 'b'");
  s = Listed({Index("b", "u1")}, {Entry("b", "u1")});
  s.indexes[0].segments = 2;
  ExpectInconsistent(s, "LanceDB counts 2 entries of index 'b', its manifest holds 1");
  // A type LanceDB lists that is not its entry's.
  s = Listed({Index("b", "u1")}, {Entry("b", "u1", {0}, {"id"}, 1, "/lance.table.BitmapIndexDetails")});
  EXPECT_EQ(Names(EntryConsistency(s)), (std::vector<std::string>{"MISMATCH"}));
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
