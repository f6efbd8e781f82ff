// The vigil_table module: a Vigil table as a SQLite virtual table with
// constraint pushdown into FilterRows (which uses BTREE/BITMAP segments for the
// fragments they cover). Pushed constraints are never omitted: SQLite re-checks
// every row, so a constraint whose value cannot be converted exactly is skipped
// (the pushed filter is then a superset) and the result is always SQLite's.
#include <optional>

#include "sql/select/vtab.h"
#include "sql/select/vtab_internal.h"
#include "sql/select/vtab_module.h"
#include "vigil/query/query.h"

namespace vigil::sql::internal {

namespace {

constexpr size_t kTakeChunk = 256;

struct TableCursor : sqlite3_vtab_cursor {
  // Rows to produce, in row-address order.
  std::vector<RowAddress> rows;
  size_t pos = 0;
  // Streaming full scan (no pushed constraint, some column needed).
  std::unique_ptr<RecordBatchReader> scan;
  RecordBatch batch;       // current batch (scan) or chunk (rows)
  size_t batch_begin = 0;  // rows index of batch row 0 (rows mode)
  size_t batch_row = 0;    // scan mode: row within batch
  bool eof = true;
  bool scanning = false;
  std::vector<int> column_map;  // vtab column -> batch column, -1 when not projected
  query::IoRecorder* recorder = nullptr;
  AccessStats* stats = nullptr;

  Status Filter(VigilVtab* vt, const char* idx_str, int argc, sqlite3_value** argv);
  Status Next(VigilVtab* vt);
  bool Eof() const { return eof; }
  void Column(const VigilVtab& vt, sqlite3_context* ctx, int col) const;
  sqlite3_int64 Rowid() const {
    return static_cast<sqlite3_int64>(scanning ? batch.row_addresses[batch_row] : rows[pos]);
  }
};

double IndexedCost(const query::TableSnapshot& snap, const Field& f, int op) {
  bool indexed = !snap.IndexOn(f.name, "BTREE").empty() || !snap.IndexOn(f.name, "BITMAP").empty();
  if (!indexed) return 0.5;
  return op == SQLITE_INDEX_CONSTRAINT_EQ ? 0.01 : 0.2;
}

int BestIndex(sqlite3_vtab* base, sqlite3_index_info* info) {
  auto* vt = static_cast<VigilVtab*>(base);
  auto snap = vt->host->Snapshot(vt->table);
  if (!snap.ok()) return VtabError(base, vt->host, snap.status());
  double rows = static_cast<double>((*snap)->manifest().CountLiveRows()) + 1;
  double fraction = 1.0;
  std::vector<PushedConstraint> pushed;
  int argv = 0;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (!c.usable || c.iColumn < 0 || c.iColumn >= static_cast<int>(vt->schema->num_fields())) continue;
    const Field& f = vt->schema->field(static_cast<size_t>(c.iColumn));
    auto op = PushableOp(c.op, f.type);
    if (!op) continue;
    PushedConstraint pc{c.iColumn, *op, false};
    if (c.op == SQLITE_INDEX_CONSTRAINT_EQ && sqlite3_vtab_in(info, i, -1)) {
      sqlite3_vtab_in(info, i, 1);
      pc.in_list = true;
    }
    if (c.op != SQLITE_INDEX_CONSTRAINT_ISNULL) PassConstraint(info, i, /*omit=*/false, &argv);
    fraction *= IndexedCost(**snap, f, c.op);
    pushed.push_back(pc);
  }
  SetPlan(info, EncodePushed(pushed, info->colUsed) + "#" + DescribePushed(*vt->schema, pushed));
  info->estimatedRows = static_cast<sqlite3_int64>(rows * fraction) + 1;
  info->estimatedCost = rows * fraction + 10;
  return SQLITE_OK;
}

Status LoadChunk(const query::TableSnapshot& snap, const std::vector<std::string>& columns, TableCursor* cur) {
  cur->batch_begin = cur->pos;
  size_t end = std::min(cur->rows.size(), cur->pos + kTakeChunk);
  std::vector<RowAddress> chunk(cur->rows.begin() + static_cast<long>(cur->pos),
                                cur->rows.begin() + static_cast<long>(end));
  std::optional<ScopedIoObserver> observe;
  if (cur->recorder) observe.emplace(cur->recorder);
  VIGIL_ASSIGN_OR_RETURN(cur->batch, TakeRowsBlocked(snap, chunk, columns));
  return Status::OK();
}

Status NextScanBatch(TableCursor* cur) {
  for (;;) {
    std::optional<ScopedIoObserver> observe;
    if (cur->recorder) observe.emplace(cur->recorder);
    VIGIL_ASSIGN_OR_RETURN(auto batch, cur->scan->Next());
    if (!batch) {
      cur->eof = true;
      return Status::OK();
    }
    if (batch->num_rows == 0) continue;
    cur->batch = std::move(*batch);
    cur->batch_row = 0;
    return Status::OK();
  }
}

Status StartFilter(VigilVtab* vt, TableCursor* cur, const char* idx_str, int argc, sqlite3_value** argv) {
  VIGIL_ASSIGN_OR_RETURN(const query::TableSnapshot* snap, vt->host->Snapshot(vt->table));
  uint64_t used = 0;
  std::vector<PushedConstraint> pushed = DecodePushed(idx_str ? idx_str : "", &used);
  bool empty = false;
  VIGIL_ASSIGN_OR_RETURN(auto conjuncts, BuildConjuncts(*vt->schema, pushed, argv, argc, false, &empty));
  cur->stats = vt->host->Access(VtabName(VtabKind::kTable, vt->table));
  cur->stats->table = vt->table.ToString();
  cur->stats->access = conjuncts.empty() ? "scan" : "filter";
  cur->stats->plan = DescribePushed(*vt->schema, pushed);
  cur->stats->filter_calls++;
  cur->recorder = cur->stats->recorder.get();
  std::vector<std::string> columns = UsedColumns(*vt->schema, used, &cur->column_map);
  cur->rows.clear();
  cur->pos = 0;
  cur->scanning = false;
  cur->eof = false;
  if (empty) {
    cur->eof = true;
    return Status::OK();
  }
  if (conjuncts.empty() && !columns.empty()) {
    ScanOptions opts;
    opts.columns = columns;
    cur->scanning = true;
    std::optional<ScopedIoObserver> observe;
    if (cur->recorder) observe.emplace(cur->recorder);
    VIGIL_ASSIGN_OR_RETURN(cur->scan, snap->dataset()->Scan(opts));
    return NextScanBatch(cur);
  }
  VIGIL_ASSIGN_OR_RETURN(Roaring64Map hits, query::FilterRows(*snap, conjuncts, cur->recorder));
  cur->rows.resize(hits.cardinality());
  if (!cur->rows.empty()) hits.toUint64Array(cur->rows.data());
  cur->eof = cur->rows.empty();
  if (!cur->eof && !columns.empty()) return LoadChunk(*snap, columns, cur);
  cur->batch = RecordBatch{};
  return Status::OK();
}

Status TableCursor::Filter(VigilVtab* vt, const char* idx_str, int argc, sqlite3_value** argv) {
  VIGIL_RETURN_IF_ERROR(StartFilter(vt, this, idx_str, argc, argv));
  if (!eof) stats->rows++;
  return Status::OK();
}

Status TableCursor::Next(VigilVtab* vt) {
  if (scanning) {
    if (++batch_row >= batch.num_rows) VIGIL_RETURN_IF_ERROR(NextScanBatch(this));
  } else if (++pos >= rows.size()) {
    eof = true;
  } else if (!batch.columns.empty() && pos >= batch_begin + batch.num_rows) {
    VIGIL_ASSIGN_OR_RETURN(const query::TableSnapshot* snap, vt->host->Snapshot(vt->table));
    std::vector<int> ignored;
    uint64_t used = 0;
    for (size_t i = 0; i < column_map.size(); ++i) {
      if (column_map[i] >= 0) used |= uint64_t{1} << std::min<size_t>(i, 63);
    }
    VIGIL_RETURN_IF_ERROR(LoadChunk(*snap, UsedColumns(*vt->schema, used, &ignored), this));
  }
  if (!eof) stats->rows++;
  return Status::OK();
}

void TableCursor::Column(const VigilVtab& vt, sqlite3_context* ctx, int col) const {
  if (col < 0 || col >= static_cast<int>(column_map.size()) || column_map[col] < 0) {
    sqlite3_result_null(ctx);
    return;
  }
  const size_t row = scanning ? batch_row : pos - batch_begin;
  const vigil::Column& c = batch.columns[static_cast<size_t>(column_map[col])];
  ResultValue(ctx, c.ValueAt(row), vt.schema->field(static_cast<size_t>(col)).type);
}

int Create(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out, char** err) {
  return ConnectVigilVtab(db, static_cast<VtabHost*>(aux), argc, argv, "", out, err);
}

}  // namespace

const sqlite3_module* TableModule() {
  static const sqlite3_module kModule =
      ReadOnlyModule<VigilVtab, TableCursor>({Create, Create, BestIndex, DisconnectVigilVtab});
  return &kModule;
}

}  // namespace vigil::sql::internal
