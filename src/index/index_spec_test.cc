// The type/property matrix beyond the basics: training parameters kept in the
// stored properties and the build request, the caps a job carries, cap errors
// that name the vigil.toml key and its source, and the limits of the caps.
#include "vigil/index/index_spec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace vigil::index {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Field Vector(uint32_t dim) { return Field{1, "emb", DataType::Vector(VectorElement::kFloat32, dim), false}; }

std::map<std::string, std::string> Ivf(std::map<std::string, std::string> extra = {}) {
  std::map<std::string, std::string> p = {
      {"index_type", "IVF_PQ"}, {"metric", "l2"}, {"num_partitions", "4"}, {"num_sub_vectors", "2"}};
  for (auto& [k, v] : extra) p[k] = v;
  return p;
}

TEST(IndexSpecTest, TrainingParametersAreStoredAndReachTheBuildRequest) {
  auto spec =
      ValidateIndexSpec(IndexType::kIvfPq, Ivf({{"max_iterations", "3"}, {"sample_rate", "64"}}), Vector(8), 1000, 1);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->ivf_pq.max_iterations, 3u);
  EXPECT_EQ(spec->ivf_pq.sample_rate, 64u);
  const std::string json = SpecToPropertiesJson(*spec);
  EXPECT_EQ(json, R"({"max_iterations":3,"metric_type":"l2","num_bits":8,"num_partitions":4,"num_sub_vectors":2,)"
                  R"("sample_rate":64})");
  EXPECT_EQ(*SpecFromPropertiesJson(IndexType::kIvfPq, json), *spec);
  auto props = RequestPropertiesFromJson(IndexType::kIvfPq, json);
  ASSERT_TRUE(props.ok()) << props.status().ToString();
  EXPECT_EQ(props->at("max_iterations"), "3");
  EXPECT_EQ(props->at("sample_rate"), "64");
  // The request reproduces the spec it came from.
  EXPECT_EQ(*ValidateIndexSpec(IndexType::kIvfPq, *props, Vector(8), 1000, 1), *spec);

  // The defaults are written too; properties stored without the keys (indexes built
  // before they always were) read as the defaults of that time, not today's.
  auto plain = ValidateIndexSpec(IndexType::kIvfPq, Ivf(), Vector(8), 1000, 1);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(SpecToPropertiesJson(*plain), R"({"max_iterations":25,"metric_type":"l2","num_bits":8,)"
                                          R"("num_partitions":4,"num_sub_vectors":2,"sample_rate":256})");
  EXPECT_EQ(*SpecFromPropertiesJson(IndexType::kIvfPq, SpecToPropertiesJson(*plain)), *plain);
  const std::string legacy = R"({"metric_type":"l2","num_bits":8,"num_partitions":4,"num_sub_vectors":2})";
  auto old = SpecFromPropertiesJson(IndexType::kIvfPq, legacy);
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_EQ(old->ivf_pq.max_iterations, 50u);
  EXPECT_EQ(old->ivf_pq.sample_rate, 256u);
  EXPECT_EQ(RequestPropertiesFromJson(IndexType::kIvfPq, legacy)->at("max_iterations"), "50");

  EXPECT_THAT(
      ValidateIndexSpec(IndexType::kIvfPq, Ivf({{"max_iterations", "0"}}), Vector(8), 1000, 1).status().message(),
      HasSubstr("\"max_iterations\" must be positive"));
  EXPECT_THAT(
      ValidateIndexSpec(IndexType::kIvfPq, Ivf({{"max_iterations", "1001"}}), Vector(8), 1000, 1).status().message(),
      HasSubstr("max_iterations must be at most 1000"));
}

TEST(IndexSpecTest, AJobCarriesTheCapsItWasAdmittedUnder) {
  IndexSpec spec = *ValidateIndexSpec(IndexType::kIvfPq, Ivf(), Vector(8), 1000, 1);
  // Default caps add nothing: the job's properties are the index's.
  EXPECT_EQ(JobPropertiesJson(spec, IndexCaps{}), SpecToPropertiesJson(spec));
  EXPECT_EQ(*AdmittedCapsFromJson(JobPropertiesJson(spec, IndexCaps{})), IndexCaps{});

  IndexCaps raised;
  raised.max_vector_dimension = 8192;
  raised.max_partitions = 100'000;
  const std::string json = JobPropertiesJson(spec, raised);
  EXPECT_THAT(json, HasSubstr(R"("admitted_caps":{)"));
  EXPECT_LE(json.size(), bounds::kMaxPropertiesJsonBytes);
  EXPECT_EQ(*AdmittedCapsFromJson(json), raised);
  // The caps are not part of the index's definition.
  EXPECT_EQ(*SpecFromPropertiesJson(IndexType::kIvfPq, json), spec);
  EXPECT_THAT(RequestPropertiesFromJson(IndexType::kIvfPq, json)->count("admitted_caps"), 0u);

  EXPECT_EQ(AdmittedCapsFromJson("[1]").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(AdmittedCapsFromJson(R"({"admitted_caps":{"max_rows":1}})").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(AdmittedCapsFromJson(R"({"admitted_caps":{"max_rows":1,"max_fragments":1,"max_vector_dimension":)"
                                 R"(4294967296,"max_partitions":1,"max_sub_vectors":1}})")
                .status()
                .code(),
            StatusCode::kCorruption);
}

TEST(IndexSpecTest, AnExceededCapNamesItsKeyValueAndSource) {
  auto dim = ValidateIndexSpec(IndexType::kIvfPq, Ivf(), Vector(4608), 1000, 1);
  EXPECT_EQ(dim.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(dim.status().message(),
              HasSubstr("vector dimension 4608 of column 'emb' exceeds caps.max_vector_dimension = 4096 (the default; "
                        "raise it with max_vector_dimension under [caps] in vigil.toml)"));
  IndexCaps raised;
  raised.max_vector_dimension = 8192;
  EXPECT_TRUE(ValidateIndexSpec(IndexType::kIvfPq, Ivf(), Vector(4608), 1000, 1, raised).ok());

  auto parts = ValidateIndexSpec(IndexType::kIvfPq, Ivf({{"num_partitions", "70000"}}), Vector(8), 100'000, 1);
  EXPECT_THAT(parts.status().message(),
              HasSubstr("num_partitions 70000 exceeds caps.max_partitions = 65536 (the default; "));
  IndexCaps low;
  low.max_partitions = 2;
  EXPECT_THAT(ValidateIndexSpec(IndexType::kIvfPq, Ivf(), Vector(8), 1000, 1, low).status().message(),
              HasSubstr("num_partitions 4 exceeds caps.max_partitions = 2 (set in vigil.toml)"));
  low = {};
  low.max_rows = 10;
  const Field id{0, "id", DataType::Of(TypeId::kInt64), false};
  EXPECT_THAT(ValidateIndexSpec(IndexType::kBtree, {}, id, 1000, 1, low).status().message(),
              HasSubstr("the table has 1000 rows, more than caps.max_rows = 10 (set in vigil.toml)"));
  EXPECT_THAT(ValidateIndexSpec(IndexType::kIvfPq, Ivf(), Vector(8), 1000, 200'000).status().message(),
              HasSubstr("200000 fragments, more than caps.max_fragments = 100000 (the default"));
}

TEST(IndexSpecTest, CapsBeyondWhatTheBuildHonoursAreRefused) {
  EXPECT_TRUE(CheckIndexCaps(IndexCaps{}).ok());
  EXPECT_TRUE(CheckIndexCaps(kIndexCapsLimits).ok());
  IndexCaps c;
  c.max_partitions = kIndexCapsLimits.max_partitions + 1;
  EXPECT_THAT(CheckIndexCaps(c).message(), HasSubstr("caps.max_partitions = 1048577 is outside 1..1048576"));
  c = {};
  c.max_rows = 0;
  EXPECT_EQ(CheckIndexCaps(c).code(), StatusCode::kInvalidArgument);
  c = {};
  c.max_sub_vectors = 8192;
  EXPECT_THAT(CheckIndexCaps(c).message(), HasSubstr("exceeds caps.max_vector_dimension = 4096"));
}

TEST(IndexSpecTest, DefinitionsForMessages) {
  IndexSpec spec = *ValidateIndexSpec(IndexType::kIvfPq, Ivf({{"metric", "cosine"}}), Vector(8), 1000, 1);
  EXPECT_EQ(
      DescribeDefinition(IndexType::kIvfPq, {"emb"}, spec),
      R"(IVF_PQ (emb) {"max_iterations":25,"metric_type":"cosine","num_bits":8,"num_partitions":4,"num_sub_vectors":2,)"
      R"("sample_rate":256})");
  EXPECT_THAT(DescribeDefinition(IndexType::kBtree, {"id"}, IndexSpec{}), Not(HasSubstr("metric")));
}

}  // namespace
}  // namespace vigil::index
