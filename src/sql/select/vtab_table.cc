// The vigil_table module: a Vigil table as a SQLite virtual table with
// constraint pushdown into FilterRows (which uses BTREE/BITMAP segments for the
// fragments they cover). Pushed constraints are never omitted: SQLite re-checks
// every row, so a constraint whose value cannot be converted exactly is skipped
// (the pushed filter is then a superset) and the result is always SQLite's.
#include <optional>

#include "sql/select/vtab.h"
#include "sql/select/vtab_internal.h"
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
  RecordBatch batch;        // current batch (scan) or chunk (rows)
  size_t batch_begin = 0;   // rows index of batch row 0 (rows mode)
  size_t batch_row = 0;     // scan mode: row within batch
  bool eof = true;
  bool scanning = false;
  std::vector<int> column_map;  // vtab column -> batch column, -1 when not projected
  query::IoRecorder* recorder = nullptr;
  AccessStats* stats = nullptr;
};

int Open(sqlite3_vtab* vtab, sqlite3_vtab_cursor** out) {
  *out = new TableCursor();
  return SQLITE_OK;
}

int Close(sqlite3_vtab_cursor* cur) {
  delete static_cast<TableCursor*>(cur);
  return SQLITE_OK;
}

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
    if (c.op != SQLITE_INDEX_CONSTRAINT_ISNULL) info->aConstraintUsage[i].argvIndex = ++argv;
    info->aConstraintUsage[i].omit = 0;
    fraction *= IndexedCost(**snap, f, c.op);
    pushed.push_back(pc);
  }
  std::string spec = EncodePushed(pushed, info->colUsed) + "#" + DescribePushed(*vt->schema, pushed);
  info->idxStr = sqlite3_mprintf("%s", spec.c_str());
  info->needToFreeIdxStr = 1;
  info->estimatedRows = static_cast<sqlite3_int64>(rows * fraction) + 1;
  info->estimatedCost = rows * fraction + 10;
  return SQLITE_OK;
}

// Projected columns of `used` (bit i: column i; bit 63: 63 and above).
std::vector<std::string> UsedColumns(const Schema& schema, uint64_t used, std::vector<int>* map) {
  std::vector<std::string> names;
  map->assign(schema.num_fields(), -1);
  for (size_t i = 0; i < schema.num_fields(); ++i) {
    if (used & (uint64_t{1} << std::min<size_t>(i, 63))) {
      (*map)[i] = static_cast<int>(names.size());
      names.push_back(schema.field(i).name);
    }
  }
  return names;
}

Status LoadChunk(const query::TableSnapshot& snap, const std::vector<std::string>& columns, TableCursor* cur) {
  cur->batch_begin = cur->pos;
  size_t end = std::min(cur->rows.size(), cur->pos + kTakeChunk);
  std::vector<RowAddress> chunk(cur->rows.begin() + static_cast<long>(cur->pos), cur->rows.begin() + static_cast<long>(end));
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

int Filter(sqlite3_vtab_cursor* base, int idx_num, const char* idx_str, int argc, sqlite3_value** argv) {
  auto* cur = static_cast<TableCursor*>(base);
  auto* vt = static_cast<VigilVtab*>(base->pVtab);
  Status st = StartFilter(vt, cur, idx_str, argc, argv);
  if (!st.ok()) return VtabError(base->pVtab, vt->host, st);
  if (!cur->eof) cur->stats->rows++;
  return SQLITE_OK;
}

int Next(sqlite3_vtab_cursor* base) {
  auto* cur = static_cast<TableCursor*>(base);
  auto* vt = static_cast<VigilVtab*>(base->pVtab);
  if (cur->scanning) {
    if (++cur->batch_row >= cur->batch.num_rows) {
      Status st = NextScanBatch(cur);
      if (!st.ok()) return VtabError(base->pVtab, vt->host, st);
    }
  } else if (++cur->pos >= cur->rows.size()) {
    cur->eof = true;
  } else if (!cur->batch.columns.empty() && cur->pos >= cur->batch_begin + cur->batch.num_rows) {
    auto snap = vt->host->Snapshot(vt->table);
    if (!snap.ok()) return VtabError(base->pVtab, vt->host, snap.status());
    std::vector<int> ignored;
    uint64_t used = 0;
    for (size_t i = 0; i < cur->column_map.size(); ++i) {
      if (cur->column_map[i] >= 0) used |= uint64_t{1} << std::min<size_t>(i, 63);
    }
    Status st = LoadChunk(**snap, UsedColumns(*vt->schema, used, &ignored), cur);
    if (!st.ok()) return VtabError(base->pVtab, vt->host, st);
  }
  if (!cur->eof) cur->stats->rows++;
  return SQLITE_OK;
}

int Eof(sqlite3_vtab_cursor* base) { return static_cast<TableCursor*>(base)->eof ? 1 : 0; }

int ColumnValue(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int col) {
  auto* cur = static_cast<TableCursor*>(base);
  auto* vt = static_cast<VigilVtab*>(base->pVtab);
  if (col < 0 || col >= static_cast<int>(cur->column_map.size()) || cur->column_map[col] < 0) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  size_t row = cur->scanning ? cur->batch_row : cur->pos - cur->batch_begin;
  const Column& c = cur->batch.columns[static_cast<size_t>(cur->column_map[col])];
  ResultValue(ctx, c.ValueAt(row), vt->schema->field(static_cast<size_t>(col)).type);
  return SQLITE_OK;
}

int Rowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) {
  auto* cur = static_cast<TableCursor*>(base);
  RowAddress a = cur->scanning ? cur->batch.row_addresses[cur->batch_row] : cur->rows[cur->pos];
  *rowid = static_cast<sqlite3_int64>(a);
  return SQLITE_OK;
}

int Create(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out, char** err) {
  return ConnectVigilVtab(db, static_cast<VtabHost*>(aux), argc, argv, "", out, err);
}

}  // namespace

const sqlite3_module* TableModule() {
  static const sqlite3_module kModule = [] {
    sqlite3_module m{};
    m.iVersion = 1;
    m.xCreate = Create;
    m.xConnect = Create;
    m.xBestIndex = BestIndex;
    m.xDisconnect = DisconnectVigilVtab;
    m.xDestroy = DisconnectVigilVtab;
    m.xOpen = Open;
    m.xClose = Close;
    m.xFilter = Filter;
    m.xNext = Next;
    m.xEof = Eof;
    m.xColumn = ColumnValue;
    m.xRowid = Rowid;
    return m;
  }();
  return &kModule;
}

}  // namespace vigil::sql::internal
