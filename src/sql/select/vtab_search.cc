// The vigil_vector_search and vigil_fts_search modules. Their arguments are
// hidden columns filled by the rewrite: vector_search(column, query, k,
// options, prefilter, p0..p31) and fts_search(column, query, k). The prefilter
// (simple WHERE conjuncts on the table's columns, moved here by the rewrite)
// and the "filter" option are applied before top-k; constraints that SQLite
// offers in xBestIndex are never used, so a join can never turn into a
// per-row prefilter and the result does not depend on the plan.
#include <algorithm>
#include <cstring>

#include "sql/select/vtab.h"
#include "sql/select/vtab_internal.h"
#include "sql/select/vtab_module.h"
#include "sql/select/vtab_search_filter.h"
#include "vigil/ingest/ingest.h"
#include "vigil/query/query.h"
#include "vigil/sql/result.h"

namespace vigil::sql::internal {

namespace {

constexpr int kMaxPrefilterValues = 32;
constexpr const char* kVectorExtra =
    "_distance REAL, column_name HIDDEN, query HIDDEN, k HIDDEN, options HIDDEN, prefilter HIDDEN";
constexpr const char* kFtsExtra = "_score REAL, column_name HIDDEN, query HIDDEN, k HIDDEN";

bool IsVector(const sqlite3_vtab* base) { return base->pModule == VectorSearchModule(); }
int NumArgs(bool vector) { return vector ? 5 + kMaxPrefilterValues : 3; }

struct SearchCursor : sqlite3_vtab_cursor {
  std::vector<RowAddress> rows;
  std::vector<double> scores;
  RecordBatch batch;  // projected rows (empty columns when none is used)
  std::vector<int> column_map;
  size_t pos = 0;
  AccessStats* stats = nullptr;

  Status Filter(VigilVtab* vt, const char* idx_str, int argc, sqlite3_value** argv);
  Status Next(VigilVtab*) {
    ++pos;
    return Status::OK();
  }
  bool Eof() const { return pos >= rows.size(); }
  void Column(const VigilVtab& vt, sqlite3_context* ctx, int col) const;
  sqlite3_int64 Rowid() const { return static_cast<sqlite3_int64>(rows[pos]); }
};

int BestIndex(sqlite3_vtab* base, sqlite3_index_info* info) {
  auto* vt = static_cast<VigilVtab*>(base);
  const bool vector = IsVector(base);
  const int first_hidden = static_cast<int>(vt->schema->num_fields()) + 1;
  std::vector<int> by_arg(static_cast<size_t>(NumArgs(vector)), -1);
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    int arg = c.iColumn - first_hidden;
    if (arg < 0 || arg >= NumArgs(vector) || c.op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    if (!c.usable) return SQLITE_CONSTRAINT;  // an argument from a later table: not this plan
    by_arg[static_cast<size_t>(arg)] = i;
  }
  for (int required = 0; required < 3; ++required) {
    // Not a usable plan (SQLite also asks for subsets, e.g. per OR branch); with no usable
    // plan at all the statement fails with "no query solution".
    if (by_arg[static_cast<size_t>(required)] < 0) return SQLITE_CONSTRAINT;
  }
  int argv = 0;
  uint64_t present = 0;
  for (size_t arg = 0; arg < by_arg.size(); ++arg) {
    if (by_arg[arg] < 0) continue;
    PassConstraint(info, by_arg[arg], /*omit=*/true, &argv);
    present |= uint64_t{1} << arg;
  }
  info->idxNum = 0;
  SetPlan(info, std::to_string(present) + "|" + std::to_string(static_cast<uint64_t>(info->colUsed)));
  ConsumeOrderBy(info, /*column=*/first_hidden - 1, /*desc=*/!vector);  // by distance, or by score
  info->estimatedCost = 100;
  info->estimatedRows = 10;
  return SQLITE_OK;
}

Result<std::vector<float>> ParseQueryVector(sqlite3_value* v) {
  if (sqlite3_value_type(v) == SQLITE_BLOB) {
    int n = sqlite3_value_bytes(v);
    if (n % 4 != 0) return Status::InvalidArgument("a FLOAT32 query blob must hold a multiple of 4 bytes");
    std::vector<float> out(static_cast<size_t>(n) / 4);
    if (n > 0) std::memcpy(out.data(), sqlite3_value_blob(v), static_cast<size_t>(n));
    return out;
  }
  if (sqlite3_value_type(v) != SQLITE_TEXT) {
    return Status::InvalidArgument("the query vector must be a JSON array string or a FLOAT32 blob");
  }
  const std::string_view text(reinterpret_cast<const char*>(sqlite3_value_text(v)),
                              static_cast<size_t>(sqlite3_value_bytes(v)));
  std::vector<float> out;
  Status st = ParseVectorText(text, 0, &out);
  if (!st.ok()) return Status::InvalidArgument("the query vector is not valid: " + st.message());
  return out;
}

Result<uint32_t> ParseK(sqlite3_value* v, size_t max_rows) {
  if (sqlite3_value_type(v) != SQLITE_INTEGER) return Status::InvalidArgument("k must be a positive integer");
  int64_t k = sqlite3_value_int64(v);
  if (k <= 0) return Status::InvalidArgument("k must be a positive integer");
  if (static_cast<uint64_t>(k) > max_rows) {
    return Status::ResourceExhausted(std::string(kResultTooLarge) + ": k = " + std::to_string(k) +
                                     " exceeds max_rows " + std::to_string(max_rows));
  }
  return static_cast<uint32_t>(k);
}

std::string Text(sqlite3_value* v) {
  if (v == nullptr || sqlite3_value_type(v) == SQLITE_NULL) return "";
  return std::string(reinterpret_cast<const char*>(sqlite3_value_text(v)), static_cast<size_t>(sqlite3_value_bytes(v)));
}

// Projects the hit rows to the used columns.
Status Project(const query::TableSnapshot& snap, const Schema& schema, uint64_t used, SearchCursor* cur) {
  const std::vector<std::string> columns = UsedColumns(schema, used, &cur->column_map);
  cur->batch = RecordBatch{};
  if (columns.empty() || cur->rows.empty()) return Status::OK();
  std::optional<ScopedIoObserver> observe;
  if (cur->stats->recorder) observe.emplace(cur->stats->recorder.get());
  VIGIL_ASSIGN_OR_RETURN(cur->batch, TakeRowsBlocked(snap, cur->rows, columns));
  return Status::OK();
}

Status RunVector(VigilVtab* vt, const query::TableSnapshot& snap, sqlite3_value** args, SearchCursor* cur) {
  const std::string column = Text(args[0]);
  VIGIL_ASSIGN_OR_RETURN(std::vector<float> q, ParseQueryVector(args[1]));
  VIGIL_ASSIGN_OR_RETURN(uint32_t k, ParseK(args[2], vt->host->max_rows()));
  VIGIL_ASSIGN_OR_RETURN(SearchOptions opts, ParseSearchOptions(Text(args[3]), k));
  bool empty = false;
  VIGIL_ASSIGN_OR_RETURN(auto prefilter,
                         ParsePrefilter(*vt->schema, Text(args[4]), args + 5, kMaxPrefilterValues, &empty));
  std::vector<std::vector<query::ColumnPredicate>> terms{{}};
  if (!opts.filter.empty()) {
    VIGIL_ASSIGN_OR_RETURN(terms, FilterToDnf(*vt->schema, opts.filter));
  }
  cur->stats->plan = DescribeSearch(column, opts, prefilter, terms.size());
  cur->rows.clear();
  cur->scores.clear();
  if (empty) return Status::OK();
  std::vector<query::VectorHit> all;
  for (auto& term : terms) {
    term.insert(term.end(), prefilter.begin(), prefilter.end());
    VIGIL_ASSIGN_OR_RETURN(auto hits,
                           query::VectorSearch(snap, column, q, opts.query, term, cur->stats->recorder.get()));
    all.insert(all.end(), hits.begin(), hits.end());
  }
  if (terms.size() > 1) MergeHits(&all, k);
  for (const auto& h : all) {
    cur->rows.push_back(h.row);
    cur->scores.push_back(h.distance);
  }
  return Status::OK();
}

Status RunFts(VigilVtab* vt, const query::TableSnapshot& snap, sqlite3_value** args, SearchCursor* cur) {
  const std::string column = Text(args[0]);
  if (sqlite3_value_type(args[1]) != SQLITE_TEXT) return Status::InvalidArgument("fts_search's query must be a string");
  VIGIL_ASSIGN_OR_RETURN(uint32_t k, ParseK(args[2], vt->host->max_rows()));
  cur->stats->plan = "column " + column + ", k " + std::to_string(k);
  VIGIL_ASSIGN_OR_RETURN(auto hits, query::FullTextSearch(snap, column, Text(args[1]), k, cur->stats->recorder.get()));
  cur->rows.clear();
  cur->scores.clear();
  for (const auto& h : hits) {
    cur->rows.push_back(h.row);
    cur->scores.push_back(h.score);
  }
  return Status::OK();
}

Status StartSearch(VigilVtab* vt, SearchCursor* cur, const char* idx_str, int argc, sqlite3_value** argv) {
  const bool vector = IsVector(vt);
  unsigned long long present = 0;
  unsigned long long used = 0;
  if (std::sscanf(idx_str ? idx_str : "", "%llu|%llu", &present, &used) != 2) return Status::Internal("bad plan");
  std::vector<sqlite3_value*> args(static_cast<size_t>(NumArgs(vector)), nullptr);
  int next = 0;
  for (size_t a = 0; a < args.size(); ++a) {
    if (present & (1ull << a)) args[a] = next < argc ? argv[next++] : nullptr;
  }
  VIGIL_ASSIGN_OR_RETURN(const query::TableSnapshot* snap, vt->host->Snapshot(vt->table));
  cur->stats = vt->host->Access(VtabName(vector ? VtabKind::kVectorSearch : VtabKind::kFtsSearch, vt->table));
  cur->stats->table = vt->table.ToString();
  cur->stats->access = vector ? "vector_search" : "fts_search";
  cur->stats->filter_calls++;
  if (vector) {
    VIGIL_RETURN_IF_ERROR(RunVector(vt, *snap, args.data(), cur));
  } else {
    VIGIL_RETURN_IF_ERROR(RunFts(vt, *snap, args.data(), cur));
  }
  cur->pos = 0;
  cur->stats->rows += cur->rows.size();
  return Project(*snap, *vt->schema, used, cur);
}

Status SearchCursor::Filter(VigilVtab* vt, const char* idx_str, int argc, sqlite3_value** argv) {
  return StartSearch(vt, this, idx_str, argc, argv);
}

void SearchCursor::Column(const VigilVtab& vt, sqlite3_context* ctx, int col) const {
  const int n = static_cast<int>(vt.schema->num_fields());
  if (col == n) {
    sqlite3_result_double(ctx, scores[pos]);
  } else if (col >= 0 && col < n && column_map[static_cast<size_t>(col)] >= 0) {
    const vigil::Column& c = batch.columns[static_cast<size_t>(column_map[static_cast<size_t>(col)])];
    ResultValue(ctx, c.ValueAt(pos), vt.schema->field(static_cast<size_t>(col)).type);
  } else {
    sqlite3_result_null(ctx);
  }
}

std::string VectorExtra() {
  std::string extra = kVectorExtra;
  for (int i = 0; i < kMaxPrefilterValues; ++i) extra += ", p" + std::to_string(i) + " HIDDEN";
  return extra;
}

int CreateVector(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out, char** err) {
  return ConnectVigilVtab(db, static_cast<VtabHost*>(aux), argc, argv, VectorExtra(), out, err);
}

int CreateFts(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out, char** err) {
  return ConnectVigilVtab(db, static_cast<VtabHost*>(aux), argc, argv, kFtsExtra, out, err);
}

sqlite3_module MakeModule(decltype(sqlite3_module::xCreate) create) {
  return ReadOnlyModule<VigilVtab, SearchCursor>({create, create, BestIndex, DisconnectVigilVtab});
}

}  // namespace

int MaxPrefilterValues() { return kMaxPrefilterValues; }

const sqlite3_module* VectorSearchModule() {
  static const sqlite3_module kModule = MakeModule(CreateVector);
  return &kModule;
}

const sqlite3_module* FtsSearchModule() {
  static const sqlite3_module kModule = MakeModule(CreateFts);
  return &kModule;
}

}  // namespace vigil::sql::internal
