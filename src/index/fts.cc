// Full-text segments and the in-memory full-text index on SQLite FTS5; see
// include/vigil/index/fts.h and src/index/fts_sqlite.h for the layout and the
// BM25 statistics. Thread safety: FtsSegment keeps a mutex-guarded pool of
// read-only connections, each used by one thread at a time.
#include "vigil/index/fts.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "index/build_threads.h"
#include "index/fts_postings.h"
#include "index/fts_postings_builder.h"
#include "index/fts_postings_search.h"
#include "index/fts_sqlite.h"
#include "index/fts_tokenizer.h"
#include "vigil/common/checksum.h"
#include "vigil/common/mutex.h"

namespace vigil::index {

using fts_internal::SqliteDb;
using fts_internal::Stmt;

namespace {

constexpr char kFtsFileName[] = "fts.db";
constexpr size_t kMaxIdleConnections = 16;
constexpr uint64_t kVerifyChunk = 4 << 20;

Status CheckField(const Dataset& dataset, const Field& field) {
  auto pos = dataset.schema()->IndexOfId(field.id);
  if (!pos || !(dataset.schema()->field(*pos).type == field.type)) {
    return Status::InvalidArgument("field '" + field.name + "' is not a column of this table version");
  }
  const Field& f = dataset.schema()->field(*pos);
  if (f.type.id != TypeId::kString) {
    return Status::InvalidArgument("FTS needs a STRING column; '" + f.name + "' is " + f.type.ToString());
  }
  if (f.nullable) return Status::InvalidArgument("FTS needs a NOT NULL column; '" + f.name + "' is nullable");
  return Status::OK();
}

// The rows of `fragments`; InvalidArgument when one is not in the version or
// listed twice (the contentless FTS5 table would index its rows twice).
Result<uint64_t> CountPhysicalRows(const Dataset& dataset, const std::vector<uint32_t>& fragments) {
  std::vector<uint32_t> sorted = fragments;
  std::sort(sorted.begin(), sorted.end());
  if (auto dup = std::adjacent_find(sorted.begin(), sorted.end()); dup != sorted.end()) {
    return Status::InvalidArgument("fragment " + std::to_string(*dup) + " is listed twice");
  }
  uint64_t rows = 0;
  for (uint32_t id : fragments) {
    const FragmentMeta* f = dataset.manifest().FindFragment(id);
    if (f == nullptr) {
      return Status::InvalidArgument("fragment " + std::to_string(id) + " is not in version " +
                                     std::to_string(dataset.version()));
    }
    rows += f->num_rows;
  }
  return rows;
}

struct BuildProgress {
  const ProgressFn& fn;
  fts_internal::PostingsBuilder* postings;
  uint64_t done = 0;
  uint64_t total = 0;
};

// Indexes the live rows of one fragment.
Status InsertFragment(const Dataset& dataset, int32_t field_id, uint32_t fragment_id, sqlite3* db, sqlite3_stmt* insert,
                      BuildProgress* progress) {
  VIGIL_ASSIGN_OR_RETURN(DeletionVector deleted, dataset.LoadDeletions(fragment_id));
  VIGIL_ASSIGN_OR_RETURN(auto reader, dataset.OpenFragment(fragment_id));
  for (size_t b = 0; b < reader->num_blocks(); ++b) {
    VIGIL_ASSIGN_OR_RETURN(auto column, reader->ReadBlock(field_id, b));
    uint64_t first = static_cast<uint64_t>(b) * reader->rows_per_block();
    for (size_t i = 0; i < column->size(); ++i) {
      auto offset = static_cast<uint32_t>(first + i);
      if (deleted.Contains(offset)) continue;
      if (!column->IsValid(i)) return Status::Corruption(reader->path() + " holds a null in a NOT NULL column");
      RowAddress row = MakeRowAddress(fragment_id, offset);
      progress->postings->BeginDocument(row);
      VIGIL_RETURN_IF_ERROR(fts_internal::InsertDocument(db, insert, row, column->StringAt(i)));
      progress->postings->EndDocument();
    }
    progress->done += column->size();
    if (progress->fn) progress->fn("encoding", progress->done, progress->total);
  }
  return Status::OK();
}

// The postings saw what FTS5 indexed: the same documents and token total.
Status CheckCapturedTokens(sqlite3* db, const fts_internal::PostingsBuilder& postings) {
  VIGIL_ASSIGN_OR_RETURN(FtsStats stats, fts_internal::QueryStats(db, fts_internal::kSentinelText));
  if (stats.documents != postings.documents() || stats.total_tokens != postings.total_tokens()) {
    return Status::Internal("full-text postings captured " + std::to_string(postings.documents()) + " documents and " +
                            std::to_string(postings.total_tokens()) + " tokens; FTS5 indexed " +
                            std::to_string(stats.documents) + " and " + std::to_string(stats.total_tokens));
  }
  return Status::OK();
}

// Writes the whole FTS database at `path` and closes it.
Status WriteFtsDatabase(const Dataset& dataset, const Field& field, const std::vector<uint32_t>& fragments,
                        const FtsParams& params, const std::string& path, BuildProgress* progress) {
  VIGIL_ASSIGN_OR_RETURN(SqliteDb db, fts_internal::OpenConnection(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  VIGIL_RETURN_IF_ERROR(
      fts_internal::Exec(db.get(),
                         "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE;"
                         "PRAGMA cache_size = -262144; PRAGMA temp_store = MEMORY; BEGIN"));
  VIGIL_RETURN_IF_ERROR(fts_internal::CaptureDocumentTokens(db.get(), params, progress->postings));
  VIGIL_RETURN_IF_ERROR(fts_internal::CreateFtsTables(db.get(), params, fts_internal::kFtsFormat));
  // No incremental merging while loading: 'optimize' merges everything once at the end.
  VIGIL_RETURN_IF_ERROR(fts_internal::Exec(db.get(), "INSERT INTO t(t, rank) VALUES('automerge', 0)"));
  VIGIL_ASSIGN_OR_RETURN(Stmt insert, fts_internal::PrepareInsert(db.get()));
  for (uint32_t id : fragments) {
    VIGIL_RETURN_IF_ERROR(InsertFragment(dataset, field.id, id, db.get(), insert.get(), progress));
  }
  insert.reset();
  VIGIL_RETURN_IF_ERROR(fts_internal::Exec(db.get(), "COMMIT"));
  VIGIL_RETURN_IF_ERROR(CheckCapturedTokens(db.get(), *progress->postings));
  progress->postings->Finish();  // encodes while FTS5 merges
  if (progress->fn) progress->fn("writing", 0, 1);
  VIGIL_RETURN_IF_ERROR(fts_internal::Exec(db.get(), "INSERT INTO t(t) VALUES('optimize')"));
  int rc = sqlite3_close(db.get());
  if (rc != SQLITE_OK) return fts_internal::SqliteStatus(db.get(), rc, "closing " + path);
  (void)db.release();
  return Status::OK();
}

// Checksums the whole inventory file `name` before SQLite reads any of it.
Status VerifyWholeFile(const SegmentFiles& files, const std::string& name) {
  const SegmentFile* entry = nullptr;
  for (const auto& f : files.meta().files) {
    if (f.name == name) entry = &f;
  }
  if (entry == nullptr) return Status::Corruption("segment " + files.meta().uuid.ToString() + " has no " + name);
  VIGIL_ASSIGN_OR_RETURN(auto file, files.OpenVerified(name));
  StreamingChecksum sum;
  std::string buf;
  for (uint64_t off = 0; off < entry->size; off += kVerifyChunk) {
    size_t n = static_cast<size_t>(std::min(kVerifyChunk, entry->size - off));
    VIGIL_RETURN_IF_ERROR(file->Read(off, n, &buf));
    if (buf.size() != n) return Status::Corruption(file->path() + " is shorter than its inventory size");
    sum.Update(buf.data(), buf.size());
  }
  if (sum.Digest() != entry->checksum) {
    return Status::Corruption(file->path() + " does not match its inventory checksum");
  }
  return Status::OK();
}

}  // namespace

void FtsStats::Add(const FtsStats& other) {
  documents += other.documents;
  total_tokens += other.total_tokens;
  for (const auto& [term, n] : other.doc_freq) doc_freq[term] += n;
}

Status BuildFtsSegment(const Dataset& dataset, const Field& field, const std::vector<uint32_t>& fragments,
                       const FtsParams& params, SegmentWriter* writer, const ProgressFn& progress) {
  VIGIL_RETURN_IF_ERROR(CheckField(dataset, field));
  VIGIL_RETURN_IF_ERROR(fts_internal::TokenizerOption(params).status());
  fts_internal::PostingsBuilder postings(BuildThreadLimit() > 1);
  BuildProgress state{progress, &postings};
  VIGIL_ASSIGN_OR_RETURN(state.total, CountPhysicalRows(dataset, fragments));
  std::string path = writer->FilePath(kFtsFileName);
  VIGIL_ASSIGN_OR_RETURN(bool exists, dataset.fs()->Exists(path));
  if (exists) return Status::AlreadyExists(path + " already exists");
  VIGIL_RETURN_IF_ERROR(WriteFtsDatabase(dataset, field, fragments, params, path, &state));
  // SQLite ran with synchronous=OFF; make the finished file durable.
  VIGIL_RETURN_IF_ERROR(dataset.fs()->SyncFile(path));
  VIGIL_RETURN_IF_ERROR(writer->AddExistingFile(kFtsFileName));
  VIGIL_ASSIGN_OR_RETURN(std::string file, postings.TakeFile());
  return writer->WriteFile(fts_internal::kPostingsFileName, file);
}

// A query the native postings answer: its words tokenized, one token each.
struct NativeQuery {
  bool any = false;
  std::vector<std::string> terms;
};

// Idle read-only connections to the segment's database, and the native
// postings with the tokenizer for query words (null in segments without them).
struct FtsSegment::Db {
  std::string uri;
  Mutex mu;
  std::vector<SqliteDb> idle VIGIL_GUARDED_BY(mu);
  std::unique_ptr<fts_internal::PostingsIndex> postings;
  std::unique_ptr<fts_internal::QueryTokenizer> tokenizer;

  // The native reading of `query`, or nullopt when only FTS5 can answer it.
  Result<std::optional<NativeQuery>> Native(const std::string& query) const {
    if (postings == nullptr || query.size() > fts_internal::kMaxQueryBytes) return std::optional<NativeQuery>();
    std::optional<fts_internal::PlainQuery> plain = fts_internal::ParsePlainQuery(query);
    if (!plain) return std::optional<NativeQuery>();
    NativeQuery native{plain->any, {}};
    for (const std::string& word : plain->words) {
      VIGIL_ASSIGN_OR_RETURN(std::vector<std::string> tokens, tokenizer->Tokenize(word));
      if (tokens.size() != 1 || tokens[0].size() >= fts_internal::kMaxTermBytes) return std::optional<NativeQuery>();
      native.terms.push_back(std::move(tokens[0]));
    }
    return std::optional<NativeQuery>(std::move(native));
  }

  Result<SqliteDb> Acquire() {
    {
      MutexLock lock(&mu);
      if (!idle.empty()) {
        SqliteDb conn = std::move(idle.back());
        idle.pop_back();
        return conn;
      }
    }
    return fts_internal::OpenConnection(uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX);
  }

  void Release(SqliteDb conn) {
    MutexLock lock(&mu);
    if (idle.size() < kMaxIdleConnections) idle.push_back(std::move(conn));
  }
};

FtsSegment::FtsSegment(std::shared_ptr<SegmentFiles> files, FtsParams params)
    : Segment(std::move(files)), params_(std::move(params)), db_(std::make_unique<Db>()) {}

FtsSegment::~FtsSegment() = default;

Result<std::shared_ptr<FtsSegment>> FtsSegment::Open(std::shared_ptr<SegmentFiles> files) {
  const IndexSegmentMeta& meta = files->meta();
  if (meta.index_type != "FTS") {
    return Status::InvalidArgument("segment " + meta.uuid.ToString() + " is " + meta.index_type + ", not FTS");
  }
  auto spec = SpecFromPropertiesJson(IndexType::kFts, meta.properties_json);
  if (!spec.ok()) return Status::Corruption("segment " + meta.uuid.ToString() + ": " + spec.status().message());
  if (auto option = fts_internal::TokenizerOption(spec->fts); !option.ok()) {
    return Status::Corruption("segment " + meta.uuid.ToString() + ": " + option.status().message());
  }
  VIGIL_RETURN_IF_ERROR(VerifyWholeFile(*files, kFtsFileName));
  std::string uri = fts_internal::ImmutableUri(files->FilePath(kFtsFileName));
  std::shared_ptr<FtsSegment> segment(new FtsSegment(std::move(files), spec->fts));
  segment->db_->uri = std::move(uri);
  VIGIL_ASSIGN_OR_RETURN(SqliteDb conn, segment->db_->Acquire());
  VIGIL_RETURN_IF_ERROR(fts_internal::CheckFtsTables(conn.get(), segment->params_));
  segment->db_->Release(std::move(conn));
  VIGIL_RETURN_IF_ERROR(segment->OpenPostings());
  return segment;
}

Status FtsSegment::OpenPostings() {
  bool present = false;
  for (const auto& f : meta().files) present = present || f.name == fts_internal::kPostingsFileName;
  if (!present) return Status::OK();  // a segment built before native postings: FTS5 answers everything
  VIGIL_ASSIGN_OR_RETURN(std::string bytes,
                         files().ReadVerified(fts_internal::kPostingsFileName, std::numeric_limits<size_t>::max()));
  VIGIL_ASSIGN_OR_RETURN(db_->postings, fts_internal::PostingsIndex::Parse(
                                            std::move(bytes), files().FilePath(fts_internal::kPostingsFileName)));
  VIGIL_ASSIGN_OR_RETURN(db_->tokenizer, fts_internal::QueryTokenizer::Create(params_));
  return Status::OK();
}

Result<FtsStats> FtsSegment::Stats(const std::string& query) const {
  VIGIL_ASSIGN_OR_RETURN(std::optional<NativeQuery> native, db_->Native(query));
  if (native) return fts_internal::PostingsStats(*db_->postings, native->terms);
  VIGIL_ASSIGN_OR_RETURN(SqliteDb conn, db_->Acquire());
  auto stats = fts_internal::QueryStats(conn.get(), query);
  db_->Release(std::move(conn));
  return stats;
}

Result<std::vector<FtsHit>> FtsSegment::Search(const std::string& query, const FtsStats& table_stats,
                                               const RowFilter* filter, uint32_t k) const {
  VIGIL_ASSIGN_OR_RETURN(std::optional<NativeQuery> native, db_->Native(query));
  if (native) return fts_internal::PostingsTopK(*db_->postings, native->terms, native->any, table_stats, filter, k);
  VIGIL_ASSIGN_OR_RETURN(SqliteDb conn, db_->Acquire());
  auto hits = fts_internal::QueryTopK(conn.get(), query, table_stats, filter, k);
  db_->Release(std::move(conn));
  return hits;
}

bool FtsSegment::AnswersFromPostings(const std::string& query) const {
  auto native = db_->Native(query);
  return native.ok() && native->has_value();
}

size_t FtsSegment::MemoryBytes() const {
  MutexLock lock(&db_->mu);
  size_t bytes = sizeof(*this) + db_->uri.size() + (db_->postings ? db_->postings->MemoryBytes() : 0);
  for (const auto& conn : db_->idle) {
    int cache = 0, schema = 0, highwater = 0;
    sqlite3_db_status(conn.get(), SQLITE_DBSTATUS_CACHE_USED, &cache, &highwater, 0);
    sqlite3_db_status(conn.get(), SQLITE_DBSTATUS_SCHEMA_USED, &schema, &highwater, 0);
    bytes += static_cast<size_t>(cache) + static_cast<size_t>(schema);
  }
  return bytes;
}

struct FtsMemoryIndex::Db {
  SqliteDb conn;
  Stmt insert;  // declared after conn: finalized before the connection closes
};

FtsMemoryIndex::FtsMemoryIndex() : db_(std::make_unique<Db>()) {}
FtsMemoryIndex::~FtsMemoryIndex() = default;

Result<std::unique_ptr<FtsMemoryIndex>> FtsMemoryIndex::Create(const FtsParams& params) {
  VIGIL_RETURN_IF_ERROR(fts_internal::TokenizerOption(params).status());
  std::unique_ptr<FtsMemoryIndex> index(new FtsMemoryIndex());
  VIGIL_ASSIGN_OR_RETURN(index->db_->conn,
                         fts_internal::OpenConnection(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  // With content: it refuses a row added twice, which a contentless table cannot see.
  VIGIL_RETURN_IF_ERROR(
      fts_internal::CreateFtsTables(index->db_->conn.get(), params, fts_internal::kFtsFormatWithContent));
  VIGIL_ASSIGN_OR_RETURN(index->db_->insert, fts_internal::PrepareInsert(index->db_->conn.get()));
  return index;
}

Status FtsMemoryIndex::Add(RowAddress row, std::string_view text) {
  return fts_internal::InsertDocument(db_->conn.get(), db_->insert.get(), row, text);
}

Result<FtsStats> FtsMemoryIndex::Stats(const std::string& query) const {
  return fts_internal::QueryStats(db_->conn.get(), query);
}

Result<std::vector<FtsHit>> FtsMemoryIndex::Search(const std::string& query, const FtsStats& table_stats,
                                                   const RowFilter* filter, uint32_t k) const {
  return fts_internal::QueryTopK(db_->conn.get(), query, table_stats, filter, k);
}

}  // namespace vigil::index
