// The index part of `vigil demo`: builds one index of each type on the sample
// table through the provider API and runs one query of each kind, showing
// which segments each query used (the I/O recorder).
#include "cli/demo_indexes.h"

#include <cstdio>

#include "cli/table_printer.h"
#include "vigil/index/provider.h"
#include "vigil/query/query.h"
#include "vigil/storage/datagen.h"

namespace vigil::cli {

namespace {

struct DemoIndex {
  const char* name;
  const char* column;
  index::IndexType type;
  std::map<std::string, std::string> properties;
};

Status BuildIndexes(const std::string& path, uint64_t rows) {
  std::string partitions = std::to_string(std::min<uint64_t>(64, std::max<uint64_t>(1, rows / 256)));
  std::vector<DemoIndex> indexes = {
      {"emb_idx", "emb", index::IndexType::kIvfPq,
       {{"index_type", "IVF_PQ"}, {"metric", "l2"}, {"num_partitions", partitions}, {"num_sub_vectors", "8"}}},
      {"cat_idx", "category", index::IndexType::kBitmap, {}},
      {"ts_idx", "ts", index::IndexType::kBtree, {}},
      {"body_idx", "body", index::IndexType::kFts, {{"tokenizer", "porter"}}},
  };
  for (const auto& d : indexes) {
    index::CreateIndexRequest req;
    req.dataset_path = path;
    req.column = d.column;
    req.name = d.name;
    req.type = d.type;
    req.properties = d.properties;
    req.txn.extra["origin"] = "vigil demo";
    auto r = d.type == index::IndexType::kIvfPq ? index::CreateVectorIndex(req) : index::CreateScalarIndex(req);
    if (!r.ok()) return r.status().WithContext(std::string("CREATE INDEX ") + d.name);
    std::printf("CREATE INDEX %-8s ON demo.sample (%s) USING %s -> version %llu, segment %s\n", d.name, d.column,
                std::string(index::IndexTypeName(d.type)).c_str(),
                static_cast<unsigned long long>(r->committed_version), r->segment_uuid.ToString().c_str());
  }
  return Status::OK();
}

std::string Segments(const query::IoRecorder& rec) {
  std::string s;
  for (const auto& p : rec.segments_used()) s += (s.empty() ? "" : ", ") + p;
  return s.empty() ? "(none: scan)" : s;
}

Status ShowRows(const query::TableSnapshot& snap, const std::vector<RowAddress>& rows,
                const std::vector<std::string>& extra_header, const std::vector<std::string>& extra) {
  VIGIL_ASSIGN_OR_RETURN(RecordBatch batch, query::TakeRows(snap, rows, {"id", "category"}));
  std::vector<std::string> header = {"id", "category"};
  header.insert(header.end(), extra_header.begin(), extra_header.end());
  std::vector<std::vector<std::string>> out;
  for (size_t r = 0; r < batch.num_rows; ++r) {
    out.push_back({ValueToString(batch.columns[0].ValueAt(r), batch.columns[0].type()),
                   ValueToString(batch.columns[1].ValueAt(r), batch.columns[1].type())});
    if (r < extra.size()) out.back().push_back(extra[r]);
  }
  std::printf("%s", FormatTable(header, out).c_str());
  return Status::OK();
}

Status VectorQuery(const query::TableSnapshot& snap, const DataGenerator& gen) {
  std::vector<float> q(gen.options().dim);
  gen.Embedding(123, q.data());
  query::IoRecorder rec;
  VIGIL_ASSIGN_OR_RETURN(auto hits, query::VectorSearch(snap, "emb", q, {.k = 5, .nprobes = 8, .refine_factor = 4},
                                                        {}, &rec));
  std::printf("\nvector_search(emb, <embedding of row 123>, k=5)   segments: %s\n", Segments(rec).c_str());
  std::vector<RowAddress> rows;
  std::vector<std::string> dist;
  for (const auto& h : hits) {
    rows.push_back(h.row);
    dist.push_back(std::to_string(h.distance));
  }
  return ShowRows(snap, rows, {"_distance"}, dist);
}

Status ScalarQuery(const query::TableSnapshot& snap, const DataGenerator& gen) {
  query::IoRecorder rec;
  std::vector<query::ColumnPredicate> where = {
      {"category", {index::ScalarPredicate::Op::kEq, {gen.Category(0)}}},
      {"ts", {index::ScalarPredicate::Op::kBetween, {gen.Timestamp(1000), gen.Timestamp(5000)}}}};
  VIGIL_ASSIGN_OR_RETURN(Roaring64Map rows, query::FilterRows(snap, where, &rec));
  std::printf("\nWHERE category = '%s' AND ts BETWEEN <row 1000> AND <row 5000>: %llu rows   segments: %s\n",
              gen.Category(0).c_str(), static_cast<unsigned long long>(rows.cardinality()), Segments(rec).c_str());
  std::vector<RowAddress> first;
  for (uint64_t r : rows) {
    if (first.size() == 3) break;
    first.push_back(r);
  }
  return ShowRows(snap, first, {}, {});
}

Status TextQuery(const query::TableSnapshot& snap, const DataGenerator& gen) {
  std::string body = gen.Body(7);
  std::string word = body.substr(0, body.find(' '));
  query::IoRecorder rec;
  VIGIL_ASSIGN_OR_RETURN(auto hits, query::FullTextSearch(snap, "body", word, 5, &rec));
  std::printf("\nfts_search(body, '%s', k=5)   segments: %s\n", word.c_str(), Segments(rec).c_str());
  std::vector<RowAddress> rows;
  std::vector<std::string> scores;
  for (const auto& h : hits) {
    rows.push_back(h.row);
    scores.push_back(std::to_string(h.score));
  }
  return ShowRows(snap, rows, {"_score"}, scores);
}

}  // namespace

Status RunIndexDemo(const std::string& table_path, const DataGenerator& gen) {
  std::printf("\n");
  VIGIL_RETURN_IF_ERROR(BuildIndexes(table_path, gen.options().rows));
  VIGIL_ASSIGN_OR_RETURN(auto ds, Dataset::Open(table_path));
  VIGIL_ASSIGN_OR_RETURN(auto snap, query::TableSnapshot::Open(ds));
  VIGIL_RETURN_IF_ERROR(VectorQuery(*snap, gen));
  VIGIL_RETURN_IF_ERROR(ScalarQuery(*snap, gen));
  return TextQuery(*snap, gen);
}

}  // namespace vigil::cli
