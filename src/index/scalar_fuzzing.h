// Fuzz helpers for scalar segment decoders (fuzz targets only): an input is one
// type byte (which column type to decode as) and the bytes of a segment file,
// written under a private scratch directory with a matching inventory, so the
// segment's own decoder sees them. Seeds are segments built from real data.
// Single-threaded.
#pragma once

#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "vigil/common/checksum.h"
#include "vigil/index/scalar.h"

namespace vigil::index::fuzzing {

// Column types inputs can ask for (input byte 0, modulo the count).
inline std::vector<DataType> FuzzTypes() {
  return {DataType::Of(TypeId::kInt64), DataType::Of(TypeId::kString), DataType::Of(TypeId::kFloat64),
          DataType::Of(TypeId::kBool), DataType::Of(TypeId::kDate)};
}

// A scratch directory (in memory where /dev/shm exists) removed at exit.
class Scratch {
 public:
  Scratch() {
    std::string tmpl =
        std::filesystem::is_directory("/dev/shm") ? "/dev/shm/vigil-fuzz-XXXXXX" : "/tmp/vigil-fuzz-XXXXXX";
    VIGIL_CHECK(mkdtemp(tmpl.data()) != nullptr);
    path_ = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline Scratch& SharedScratch() {
  static Scratch scratch;
  return scratch;
}

// Writes `bytes` as segment file `name` (overwriting the previous input) and opens the segment
// files.
inline Result<std::shared_ptr<SegmentFiles>> StageSegment(const std::string& name, const std::string& bytes,
                                                          const std::string& index_type) {
  static const Uuid kUuid = Uuid::Generate();
  const std::string root = SharedScratch().path() + "/input.vgl";
  const std::string dir = JoinPath(root, SegmentDir(kUuid));
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(JoinPath(dir, name), std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  IndexSegmentMeta meta;
  meta.name = "fuzz";
  meta.uuid = kUuid;
  meta.index_type = index_type;
  meta.covered_fragments = {0, 1, 2, 3, 4, 5, 6, 7};
  meta.files = {SegmentFile{name, bytes.size(), Checksum64(bytes)}};
  return SegmentFiles::Open(DefaultFileSystem(), root, meta);
}

// Predicates over a few values of `type`, each of which must evaluate or fail with
// Corruption/NotSupported.
inline std::vector<ScalarPredicate> FuzzPredicates(const DataType& type) {
  using Op = ScalarPredicate::Op;
  std::vector<Value> probes;
  switch (type.id) {
    case TypeId::kString:
      probes = {std::string(""), std::string("b"), std::string("zz")};
      break;
    case TypeId::kFloat64:
      probes = {-1.5, 0.0, 1e9};
      break;
    case TypeId::kBool:
      probes = {false, true, true};
      break;
    default:
      probes = {int64_t{-5}, int64_t{3}, int64_t{1000}};
      break;
  }
  return {{Op::kEq, {probes[1]}}, {Op::kLt, {probes[1]}},
          {Op::kGe, {probes[0]}}, {Op::kBetween, {probes[0], probes[2]}},
          {Op::kIn, probes},      {Op::kIsNull, {}}};
}

// Decodes one input with `open`; any failure must be Corruption (NotSupported for unsupported ops).
template <typename OpenFn>
void FuzzOne(const uint8_t* data, size_t size, const std::string& file_name, const std::string& index_type,
             OpenFn open) {
  if (size == 0) return;
  const std::vector<DataType> types = FuzzTypes();
  const DataType type = types[data[0] % types.size()];
  Field field{0, "v", type, false};
  auto files = StageSegment(file_name, std::string(reinterpret_cast<const char*>(data) + 1, size - 1), index_type);
  VIGIL_CHECK(files.ok());
  auto seg = open(*files, field);
  if (!seg.ok()) {
    VIGIL_CHECK(seg.status().code() == StatusCode::kCorruption || seg.status().code() == StatusCode::kInvalidArgument);
    return;
  }
  for (const ScalarPredicate& p : FuzzPredicates(type)) {
    auto got = (*seg)->Evaluate(p);
    VIGIL_CHECK(got.ok() || got.status().code() == StatusCode::kCorruption ||
                got.status().code() == StatusCode::kNotSupported);
  }
}

// 150 values of FuzzTypes()[t] with duplicates, in three fragments.
inline std::vector<Value> SeedValues(size_t t) {
  std::vector<Value> values;
  for (int64_t i = 0; i < 150; ++i) {
    switch (t) {
      case 1:
        values.push_back(std::string("key_") + std::to_string(i % 37));
        break;
      case 2:
        values.push_back(i % 5 == 0 ? -0.0 : static_cast<double>(i % 41) / 4);
        break;
      case 3:
        values.push_back(i % 3 == 0);
        break;
      default:
        values.push_back(i % 53 - 5);
        break;
    }
  }
  return values;
}

// Appends (type byte + file bytes) of a segment built by `build` over each of `types`.
template <typename BuildFn>
void BuildSeeds(const std::vector<size_t>& types, const std::string& file_name, BuildFn build,
                std::vector<std::string>* out) {
  for (size_t t : types) {
    const std::string path = SharedScratch().path() + "/seed" + std::to_string(t) + ".vgl";
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    auto schema = Schema::Make({{-1, "v", FuzzTypes()[t], false}});
    VIGIL_CHECK(schema.ok());
    DatasetOptions options;
    options.max_rows_per_fragment = 50;
    auto ds = Dataset::Create(path, *schema, {.operation = "CREATE_TABLE"}, options);
    VIGIL_CHECK(ds.ok());
    RecordBatch batch = RecordBatch::Empty(*schema);
    for (const Value& v : SeedValues(t)) VIGIL_CHECK(batch.AppendRow({v}).ok());
    std::vector<RecordBatch> batches;
    batches.push_back(std::move(batch));
    auto reader = MakeBatchReader(*schema, std::move(batches));
    auto appended = (*ds)->Append(reader.get(), {.operation = "APPEND"});
    VIGIL_CHECK(appended.ok());
    std::vector<uint32_t> fragments;
    for (const auto& f : (*appended)->manifest().fragments) fragments.push_back(f.id);
    const Uuid uuid = Uuid::Generate();
    auto writer = SegmentWriter::Create((*appended)->fs(), path, uuid);
    VIGIL_CHECK(writer.ok());
    VIGIL_CHECK(build(**appended, (*schema)->field(0), fragments, writer->get()).ok());
    VIGIL_CHECK(writer->get()->Finish().ok());
    auto bytes = DefaultFileSystem()->ReadFile(writer->get()->FilePath(file_name), 1 << 20);
    VIGIL_CHECK(bytes.ok());
    out->push_back(std::string(1, static_cast<char>(t)) + *bytes);
  }
}

}  // namespace vigil::index::fuzzing
