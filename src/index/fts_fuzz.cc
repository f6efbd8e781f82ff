// Fuzz target for full-text segments. The first input byte, modulo 3, picks the mode:
//   0: the rest is an FTS5 query string, run (Stats and Search) against a
//      small segment (its native postings answer plain words) and an in-memory
//      FTS5 index of the same documents: OK or InvalidArgument only, equal scores;
//   1: the rest is an `fts.db` file given an inventory that matches it (so
//      SQLite itself reads the damage): Open is OK or Corruption, and
//      queries on an opened file never crash;
//   2: the rest is a `postings.bin` beside the valid `fts.db`, likewise.
// Seeds are queries and valid segment files. Single-threaded.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "vigil/common/checksum.h"
#include "vigil/index/fts.h"

namespace {

using vigil::StatusCode;
using namespace vigil::index;

const char* const kDocs[] = {"alpha beta gamma", "beta beta delta", "the running fox", "gamma epsilon alpha",
                             "zeta eta theta iota"};

struct Fixture {
  std::string dir;
  std::shared_ptr<vigil::Dataset> dataset;
  std::shared_ptr<FtsSegment> segment;
  std::unique_ptr<FtsMemoryIndex> memory;
  std::string db_bytes;
  std::string postings_bytes;
  ~Fixture() { std::filesystem::remove_all(dir); }
};

vigil::IndexSegmentMeta SegmentMeta(const vigil::Uuid& uuid, std::vector<vigil::SegmentFile> files) {
  vigil::IndexSegmentMeta meta;
  meta.name = "body_idx";
  meta.uuid = uuid;
  meta.index_type = "FTS";
  meta.properties_json = R"({"tokenizer":"porter"})";
  meta.files = std::move(files);
  return meta;
}

std::shared_ptr<vigil::Dataset> MakeDataset(const std::string& path) {
  auto schema = vigil::Schema::Make({{-1, "body", vigil::DataType::Of(vigil::TypeId::kString), false}});
  VIGIL_CHECK(schema.ok());
  auto ds = vigil::Dataset::Create(path, *schema, {});
  VIGIL_CHECK(ds.ok());
  vigil::RecordBatch batch = vigil::RecordBatch::Empty(*schema);
  for (const char* d : kDocs) VIGIL_CHECK(batch.AppendRow({std::string(d)}).ok());
  auto reader = vigil::MakeBatchReader(*schema, {std::move(batch)});
  auto next = (*ds)->Append(reader.get(), {});
  VIGIL_CHECK(next.ok());
  return *next;
}

Fixture* MakeFixture() {
  auto* f = new Fixture();
  char tmpl[] = "/tmp/vigil_fts_fuzz_XXXXXX";
  VIGIL_CHECK(::mkdtemp(tmpl) != nullptr);
  f->dir = tmpl;
  f->dataset = MakeDataset(f->dir + "/t.vgl");
  vigil::Uuid uuid = vigil::Uuid::Generate();
  auto writer = SegmentWriter::Create(f->dataset->fs(), f->dataset->path(), uuid);
  VIGIL_CHECK(writer.ok());
  const vigil::Field& field = f->dataset->schema()->field(0);
  VIGIL_CHECK(BuildFtsSegment(*f->dataset, field, {0}, FtsParams{"porter"}, writer->get(), nullptr).ok());
  auto files = (*writer)->Finish();
  VIGIL_CHECK(files.ok());
  auto seg_files = SegmentFiles::Open(f->dataset->fs(), f->dataset->path(), SegmentMeta(uuid, *files));
  VIGIL_CHECK(seg_files.ok());
  auto segment = FtsSegment::Open(*seg_files);
  VIGIL_CHECK(segment.ok());
  f->segment = *segment;
  auto bytes = (*seg_files)->ReadVerified("fts.db", 1 << 24);
  VIGIL_CHECK(bytes.ok());
  f->db_bytes = *bytes;
  auto postings = (*seg_files)->ReadVerified("postings.bin", 1 << 24);
  VIGIL_CHECK(postings.ok());
  f->postings_bytes = *postings;
  auto memory = FtsMemoryIndex::Create(FtsParams{"porter"});
  VIGIL_CHECK(memory.ok());
  for (uint32_t i = 0; i < 5; ++i) VIGIL_CHECK((*memory)->Add(vigil::MakeRowAddress(1, i), kDocs[i]).ok());
  f->memory = std::move(*memory);
  return f;
}

Fixture& Shared() {
  static std::unique_ptr<Fixture> fixture(MakeFixture());
  return *fixture;
}

bool QueryOk(const vigil::Status& st) { return st.ok() || st.code() == StatusCode::kInvalidArgument; }

void FuzzQuery(const std::string& query) {
  Fixture& f = Shared();
  auto seg_stats = f.segment->Stats(query);
  auto mem_stats = f.memory->Stats(query);
  VIGIL_CHECK(QueryOk(seg_stats.status()) && QueryOk(mem_stats.status()));
  VIGIL_CHECK(seg_stats.ok() == mem_stats.ok());
  if (!seg_stats.ok()) return;
  FtsStats table = *seg_stats;
  table.Add(*mem_stats);
  auto a = f.segment->Search(query, table, nullptr, 3);
  auto b = f.memory->Search(query, table, nullptr, 3);
  VIGIL_CHECK(a.ok() && b.ok());
  VIGIL_CHECK(a->size() == b->size());  // the two parts hold the same documents
  for (size_t i = 0; i < a->size(); ++i) VIGIL_CHECK((*a)[i].score == (*b)[i].score);
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  VIGIL_CHECK(out.good());
}

// `fts.db` (and `postings.bin` when `postings` is set) written without fsync
// (unlike SegmentWriter) to keep iterations fast, opened and queried.
void FuzzFiles(const std::string& db, const std::string* postings) {
  Fixture& f = Shared();
  static const vigil::Uuid uuid = vigil::Uuid::Generate();
  std::string dir = f.dataset->path() + "/" + SegmentDir(uuid);
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/fts.db", db);
  std::vector<vigil::SegmentFile> inventory = {{"fts.db", db.size(), vigil::Checksum64(db)}};
  if (postings != nullptr) {
    WriteFile(dir + "/postings.bin", *postings);
    inventory.push_back({"postings.bin", postings->size(), vigil::Checksum64(*postings)});
  }
  auto seg_files = SegmentFiles::Open(f.dataset->fs(), f.dataset->path(), SegmentMeta(uuid, inventory));
  VIGIL_CHECK(seg_files.ok());
  auto segment = FtsSegment::Open(*seg_files);
  VIGIL_CHECK(segment.ok() || segment.status().code() == StatusCode::kCorruption);
  if (!segment.ok()) return;
  for (const char* q : {"alpha OR beta*", "\"beta delta\"", "run NOT zeta", "alpha OR beta OR gamma", "beta theta"}) {
    auto stats = (*segment)->Stats(q);
    if (!stats.ok()) continue;
    auto hits = (*segment)->Search(q, *stats, nullptr, 3);
    VIGIL_CHECK(QueryOk(hits.status()) || hits.status().code() == StatusCode::kCorruption);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      FuzzQuery(rest);
      break;
    case 1:
      FuzzFiles(rest, nullptr);
      break;
    default:
      FuzzFiles(Shared().db_bytes, &rest);
  }
  return 0;
}

void VigilFuzzSeeds(std::vector<std::string>* out) {
  for (const char* q : {"alpha", "alpha beta", "alpha OR \"beta delta\"", "gam* NOT zeta", "NEAR(alpha gamma, 3)",
                        "body: run", "^the fox", "(alpha OR beta) AND gamma", "- body : alpha"}) {
    out->push_back(std::string(1, '\0') + q);
  }
  out->push_back(std::string(1, '\1') + Shared().db_bytes);
  out->push_back(std::string(1, '\2') + Shared().postings_bytes);
}
