// Test helpers for scalar segments (tests only): one-column datasets with
// several fragments and deletions, segment build + open, the scan reference,
// raw segment files for corruption tests, and the exactness property shared by
// the BTREE and BITMAP tests. Not thread-safe.
#pragma once

#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "index/scalar_format.h"
#include "testutil/temp_dir.h"
#include "vigil/index/scalar.h"

namespace vigil::index::testing {

// A one-column ("v", NOT NULL) dataset at `path` holding `values` in fragments
// of `rows_per_fragment` rows (blocks of 32), then with rows `deleted`
// (indexes into `values`) deleted in a later version.
inline Result<std::shared_ptr<Dataset>> MakeDataset(const std::string& path, const DataType& type,
                                                    const std::vector<Value>& values,
                                                    const std::vector<size_t>& deleted = {},
                                                    uint64_t rows_per_fragment = 200) {
  VIGIL_ASSIGN_OR_RETURN(SchemaPtr schema, Schema::Make({{-1, "v", type, false}}));
  DatasetOptions options;
  options.max_rows_per_fragment = rows_per_fragment;
  options.writer.rows_per_block = 32;
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Create(path, schema, {.operation = "CREATE_TABLE"}, options));
  RecordBatch batch = RecordBatch::Empty(schema);
  for (const Value& v : values) VIGIL_RETURN_IF_ERROR(batch.AppendRow({v}));
  std::vector<RecordBatch> batches;
  batches.push_back(std::move(batch));
  auto reader = MakeBatchReader(schema, std::move(batches));
  VIGIL_ASSIGN_OR_RETURN(ds, ds->Append(reader.get(), {.operation = "APPEND"}));
  if (deleted.empty()) return ds;
  std::vector<RowAddress> rows;
  VIGIL_ASSIGN_OR_RETURN(auto scan, ds->Scan());
  std::vector<RowAddress> all;
  for (;;) {
    VIGIL_ASSIGN_OR_RETURN(auto b, scan->Next());
    if (!b) break;
    all.insert(all.end(), b->row_addresses.begin(), b->row_addresses.end());
  }
  for (size_t i : deleted) rows.push_back(all.at(i));
  return ds->Delete(rows, {.operation = "DELETE"});
}

// (row address, value) of every live row.
inline std::vector<std::pair<RowAddress, Value>> LiveRows(const Dataset& ds) {
  std::vector<std::pair<RowAddress, Value>> out;
  auto scan = ds.Scan();
  VIGIL_CHECK(scan.ok());
  for (;;) {
    auto b = (*scan)->Next();
    VIGIL_CHECK(b.ok());
    if (!b->has_value()) break;
    const RecordBatch& batch = **b;
    for (size_t r = 0; r < batch.num_rows; ++r) out.emplace_back(batch.row_addresses[r], batch.columns[0].ValueAt(r));
  }
  return out;
}

// The rows a scan with `p` returns.
inline Roaring64Map ScanMatches(const std::vector<std::pair<RowAddress, Value>>& rows, const ScalarPredicate& p,
                                const DataType& type) {
  Roaring64Map out;
  for (const auto& [row, v] : rows) {
    if (PredicateMatches(p, v, type)) out.add(row);
  }
  return out;
}

inline std::vector<uint32_t> AllFragments(const Dataset& ds) {
  std::vector<uint32_t> ids;
  for (const auto& f : ds.manifest().fragments) ids.push_back(f.id);
  return ids;
}

inline IndexSegmentMeta SegmentMeta(const Dataset& ds, const std::string& type, std::vector<SegmentFile> files) {
  IndexSegmentMeta meta;
  meta.name = "idx";
  meta.uuid = Uuid::Generate();
  meta.field_ids = {ds.schema()->field(0).id};
  meta.index_type = type;
  meta.built_at_version = ds.version();
  meta.covered_fragments = AllFragments(ds);
  meta.files = std::move(files);
  return meta;
}

// Builds ("BTREE" with `page_entries` per page, or "BITMAP") over every fragment and opens it.
inline Result<std::shared_ptr<ScalarSegment>> BuildAndOpen(const Dataset& ds, const std::string& type,
                                                           size_t page_entries = 16) {
  const Field& field = ds.schema()->field(0);
  IndexSegmentMeta meta = SegmentMeta(ds, type, {});
  VIGIL_ASSIGN_OR_RETURN(auto writer, SegmentWriter::Create(ds.fs(), ds.path(), meta.uuid));
  Status st = type == "BTREE" ? internal::BuildBtreeSegmentPaged(ds, field, meta.covered_fragments, writer.get(),
                                                                 nullptr, page_entries, 1 << 16)
                              : BuildBitmapSegment(ds, field, meta.covered_fragments, writer.get(), nullptr);
  VIGIL_RETURN_IF_ERROR(st);
  VIGIL_ASSIGN_OR_RETURN(meta.files, writer->Finish());
  VIGIL_ASSIGN_OR_RETURN(auto files, SegmentFiles::Open(ds.fs(), ds.path(), meta));
  return type == "BTREE" ? OpenBtreeSegment(files, field) : OpenBitmapSegment(files, field);
}

// Writes `bytes` as the one file `name` of a new segment (inventory matching them) and returns its
// files.
inline Result<std::shared_ptr<SegmentFiles>> WriteRawSegment(const Dataset& ds, const std::string& type,
                                                             const std::string& name, const std::string& bytes) {
  IndexSegmentMeta meta = SegmentMeta(ds, type, {});
  VIGIL_ASSIGN_OR_RETURN(auto writer, SegmentWriter::Create(ds.fs(), ds.path(), meta.uuid));
  VIGIL_RETURN_IF_ERROR(writer->WriteFile(name, bytes));
  VIGIL_ASSIGN_OR_RETURN(meta.files, writer->Finish());
  return SegmentFiles::Open(ds.fs(), ds.path(), meta);
}

// Column values to draw data from, and predicate values (data plus out-of-range,
// other numeric kinds and NULL).
struct TypeCase {
  DataType type;
  std::vector<Value> data;
  std::vector<Value> probes;
};

inline std::vector<Value> Concat(std::vector<Value> a, const std::vector<Value>& b) {
  a.insert(a.end(), b.begin(), b.end());
  a.push_back(std::monostate{});
  return a;
}

inline TypeCase Case(DataType type, std::vector<Value> data, const std::vector<Value>& extra) {
  std::vector<Value> probes = Concat(data, extra);
  return {type, std::move(data), std::move(probes)};
}

// Random data from `c`, deleting about one row in eight.
inline Result<std::shared_ptr<Dataset>> RandomDataset(const std::string& path, const TypeCase& c, uint32_t seed,
                                                      size_t rows) {
  std::mt19937 rng(seed);
  std::vector<Value> values;
  std::vector<size_t> deleted;
  for (size_t i = 0; i < rows; ++i) {
    values.push_back(c.data[rng() % c.data.size()]);
    if (rng() % 8 == 0) deleted.push_back(i);
  }
  return MakeDataset(path, c.type, values, deleted);
}

// A random predicate over `probes`; BITMAP predicates use =, IN and IS NULL only.
inline ScalarPredicate GenPredicate(const std::vector<Value>& probes, bool bitmap) {
  using Op = ScalarPredicate::Op;
  static const std::vector<Op> kAll = {Op::kEq, Op::kLt, Op::kLe, Op::kGt, Op::kGe, Op::kBetween, Op::kIn, Op::kIsNull};
  static const std::vector<Op> kBitmap = {Op::kEq, Op::kIn, Op::kIsNull};
  ScalarPredicate p;
  p.op = *rc::gen::elementOf(bitmap ? kBitmap : kAll);
  size_t n = p.op == Op::kBetween ? 2 : (p.op == Op::kIsNull ? 0 : 1);
  if (p.op == Op::kIn) n = *rc::gen::inRange<size_t>(0, 6);
  for (size_t i = 0; i < n; ++i) p.values.push_back(probes[*rc::gen::inRange<size_t>(0, probes.size())]);
  return p;
}

// Property: Evaluate() equals a scan with PredicateMatches.
inline void CheckExactAgainstScan(const TypeCase& c, const std::string& index_type) {
  vigil::testing::TempDir dir;
  auto ds = RandomDataset(dir.Join("t.vgl"), c, 7 + static_cast<uint32_t>(c.type.id), 500);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  auto seg = BuildAndOpen(**ds, index_type);
  ASSERT_TRUE(seg.ok()) << seg.status().ToString();
  const auto rows = LiveRows(**ds);
  const bool bitmap = index_type == "BITMAP";
  EXPECT_TRUE(rc::check(c.type.ToString() + " " + index_type + " equals scan", [&] {
    ScalarPredicate p = GenPredicate(c.probes, bitmap);
    auto got = (*seg)->Evaluate(p);
    RC_ASSERT(got.ok());
    RC_ASSERT(*got == ScanMatches(rows, p, c.type));
  }));
}

}  // namespace vigil::index::testing
