// Eponymous-only metadata modules: vigil_indexes(table), vigil_index_entries(table),
// vigil_orphans(table) and vigil_index_jobs. The table functions read the
// statement's leased snapshot (logical and physical views from one manifest),
// need table SHOW (a table the principal may not see reads as missing) and are
// bounded per seed 000 appendix A: an overflow is an error, never a truncation.
#include <chrono>
#include <ctime>
#include <map>
#include <set>

#include "sql/vtab.h"
#include "sql/vtab_internal.h"
#include "vigil/common/bounds.h"
#include "vigil/jobs/job_control.h"
#include "vigil/jobs/job_store.h"
#include "vigil/storage/vacuum.h"

namespace vigil::sql::internal {

namespace {

using Row = std::vector<Value>;  // vigil::Value: monostate, int64_t or string cells

constexpr size_t kMaxPropertiesBytes = 400;
constexpr size_t kMaxColumnsPerEntry = 64;
constexpr size_t kMaxExternalStringBytes = 1024;

struct MetaVtab : sqlite3_vtab {
  VtabHost* host = nullptr;
  int kind = 0;  // index into kTables
  int num_columns = 0;
};

struct MetaCursor : sqlite3_vtab_cursor {
  std::vector<Row> rows;
  size_t pos = 0;
};

struct MetaTable {
  const char* name;
  std::vector<const char*> columns;
  bool table_arg;
};

const std::vector<MetaTable>& Tables() {
  static const std::vector<MetaTable> kTables = {
      {"vigil_indexes",
       {"CatalogName", "DatabaseName", "TableName", "IndexName", "Columns", "IndexType", "RowsIndexed",
        "PhysicalEntryCount", "Properties"},
       true},
      {"vigil_index_entries",
       {"CatalogName", "DatabaseName", "TableName", "IndexName", "IndexUuid", "Columns", "IndexType", "DatasetVersion",
        "ProviderStatus", "MetadataConsistency"},
       true},
      {"vigil_orphans", {"CatalogName", "DatabaseName", "TableName", "Path", "Bytes", "Reason"}, true},
      {"vigil_index_jobs",
       {"JobId", "CatalogName", "DatabaseName", "TableName", "IndexName", "Operation", "CreateTime", "StartTime",
        "FinishTime", "State", "Outcome", "RefreshState", "ReconcileState", "Disposition", "Executor", "Message",
        "LastResolutionAction", "LastResolvedBy", "LastResolvedAt"},
       false},
  };
  return kTables;
}

// Job list columns that xBestIndex pushes into the JobFilter (equality).
constexpr int kJobCatalog = 1, kJobDatabase = 2, kJobTable = 3, kJobState = 9;

Status Bounded(const std::string& s, size_t max, const std::string& what) {
  if (s.size() > max) {
    return Status::ResourceExhausted(what + " is " + std::to_string(s.size()) + " bytes; the bound is " +
                                     std::to_string(max));
  }
  return Status::OK();
}

Result<std::string> ColumnNames(const Schema& schema, const IndexSegmentMeta& seg, bool* resolved) {
  if (seg.field_ids.size() > kMaxColumnsPerEntry) {
    return Status::ResourceExhausted("index '" + seg.name + "' has more than 64 columns");
  }
  std::string out;
  *resolved = true;
  for (int32_t id : seg.field_ids) {
    auto idx = schema.IndexOfId(id);
    if (!out.empty()) out += ",";
    if (!idx) {
      *resolved = false;
      out += "#" + std::to_string(id);
    } else {
      out += schema.field(*idx).name;
    }
  }
  VIGIL_RETURN_IF_ERROR(Bounded(out, 16 * 1024, "the column names of index '" + seg.name + "'"));
  return out;
}

Result<vigil::TableName> VisibleTable(VtabHost* host, sqlite3_value* arg, const char* fn) {
  if (arg == nullptr || sqlite3_value_type(arg) != SQLITE_TEXT) {
    return Status::InvalidArgument(std::string(fn) + " needs a table argument such as 'db.table'");
  }
  VIGIL_ASSIGN_OR_RETURN(auto name, vigil::ParseTableName(reinterpret_cast<const char*>(sqlite3_value_text(arg))));
  if (!host->principal().Has(jobs::Privilege::kShow, name.catalog, name.db, name.table)) {
    return Status::NotFound("table " + name.ToString() + " does not exist");
  }
  return name;
}

Row Prefix(const vigil::TableName& t) { return Row{Value(t.catalog), Value(t.db), Value(t.table)}; }

Result<std::vector<Row>> IndexRows(VtabHost* host, const vigil::TableName& t) {
  VIGIL_ASSIGN_OR_RETURN(const query::TableSnapshot* snap, host->Snapshot(t));
  const Manifest& m = snap->manifest();
  std::map<std::string, std::vector<const IndexSegmentMeta*>> by_name;
  std::set<std::string> uuids;
  for (const auto& seg : m.segments) {
    if (!uuids.insert(seg.uuid.ToString()).second) {
      return Status::FailedPrecondition("INDEX_METADATA_INCONSISTENT: segment " + seg.uuid.ToString() +
                                        " appears twice");
    }
    by_name[seg.name].push_back(&seg);
  }
  std::vector<Row> rows;
  for (const auto& [name, segs] : by_name) {
    bool resolved = true;
    VIGIL_ASSIGN_OR_RETURN(std::string columns, ColumnNames(*m.schema, *segs.front(), &resolved));
    std::set<uint32_t> covered;
    for (const auto* s : segs) {
      if (s->index_type != segs.front()->index_type || s->field_ids != segs.front()->field_ids || !resolved) {
        return Status::FailedPrecondition("INDEX_METADATA_INCONSISTENT: the segments of index '" + name +
                                          "' disagree on type or columns, or a column does not resolve");
      }
      covered.insert(s->covered_fragments.begin(), s->covered_fragments.end());
    }
    // Live rows only: a covered fragment's rows deleted at this version are not indexed rows.
    int64_t indexed = 0;
    for (uint32_t f : covered) {
      if (const FragmentMeta* fm = m.FindFragment(f)) indexed += static_cast<int64_t>(fm->live_rows());
    }
    VIGIL_RETURN_IF_ERROR(Bounded(name, kMaxExternalStringBytes, "index name"));
    VIGIL_RETURN_IF_ERROR(Bounded(segs.front()->properties_json, kMaxPropertiesBytes, "Properties of '" + name + "'"));
    Row r = Prefix(t);
    r.insert(r.end(), {Value(name), Value(columns), Value(segs.front()->index_type), Value(indexed),
                       Value(static_cast<int64_t>(segs.size())), Value(segs.front()->properties_json)});
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string Consistency(const query::TableSnapshot& snap, const IndexSegmentMeta& seg, bool resolved,
                        const std::map<std::string, const IndexSegmentMeta*>& first_of_name, int uuid_uses) {
  if (uuid_uses > 1 || !resolved) return "MISMATCH";
  const IndexSegmentMeta* first = first_of_name.at(seg.name);
  if (first->index_type != seg.index_type || first->field_ids != seg.field_ids) return "MISMATCH";
  if (snap.Segment(seg.uuid) == nullptr) return "UNKNOWN";
  for (uint32_t f : seg.covered_fragments) {
    if (snap.manifest().FindFragment(f) == nullptr && f >= snap.manifest().next_fragment_id) return "ORPHAN";
  }
  return "CONSISTENT";
}

Result<std::vector<Row>> EntryRows(VtabHost* host, const vigil::TableName& t) {
  VIGIL_ASSIGN_OR_RETURN(const query::TableSnapshot* snap, host->Snapshot(t));
  const Manifest& m = snap->manifest();
  std::map<std::string, const IndexSegmentMeta*> first_of_name;
  std::map<std::string, int> uuid_uses;
  for (const auto& seg : m.segments) {
    first_of_name.emplace(seg.name, &seg);
    uuid_uses[seg.uuid.ToString()]++;
  }
  std::vector<Row> rows;
  for (const auto& seg : m.segments) {
    bool resolved = true;
    VIGIL_ASSIGN_OR_RETURN(std::string columns, ColumnNames(*m.schema, seg, &resolved));
    Row r = Prefix(t);
    r.insert(r.end(), {Value(seg.name), Value(seg.uuid.ToString()), Value(columns), Value(seg.index_type),
                       Value(static_cast<int64_t>(seg.built_at_version)), Value(),
                       Value(Consistency(*snap, seg, resolved, first_of_name, uuid_uses[seg.uuid.ToString()]))});
    rows.push_back(std::move(r));
  }
  return rows;
}

// vigil_orphans: entries of the dataset no manifest references (failed or unknown
// attempts' segments and staging, stray files); VACUUM removes them once no executor
// can still write them. Reason is the entry kind (SEGMENT, STAGING, FRAGMENT, ...).
Result<std::vector<Row>> OrphanRows(VtabHost* host, const vigil::TableName& t) {
  VIGIL_ASSIGN_OR_RETURN(const query::TableSnapshot* snap, host->Snapshot(t));
  VIGIL_ASSIGN_OR_RETURN(std::vector<Orphan> orphans, ListOrphans(snap->dataset()->path()));
  std::vector<Row> rows;
  for (const Orphan& o : orphans) {
    Row r = Prefix(t);
    r.insert(r.end(), {Value(o.rel_path), Value(static_cast<int64_t>(o.bytes)),
                       Value(std::string(OrphanKindName(o.kind)) + (o.is_link ? " (link)" : ""))});
    rows.push_back(std::move(r));
  }
  return rows;
}

Value Millis(const std::optional<int64_t>& ms) {
  if (!ms) return Value();
  std::time_t secs = static_cast<std::time_t>(*ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d:%02d.%03d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(*ms % 1000));
  return Value(std::string(buf));
}

Value OptText(const std::optional<std::string>& s) { return s ? Value(*s) : Value(); }

// The last completed resolution of a job (action, actor, time), from its events.
Status LastResolution(jobs::JobStore* store, const jobs::JobRecord& job, Row* row) {
  Value action, actor, at;
  if (job.state.disposition != jobs::Disposition::kNone) {
    VIGIL_ASSIGN_OR_RETURN(auto events, store->Events(job.job_id));
    for (const auto& e : events) {
      std::string kind = e.kind;
      const char* name = kind == jobs::event::kAckCompleted             ? "ACKNOWLEDGED"
                         : kind == jobs::event::kForceCompleted          ? "FORCE_RELEASE"
                         : kind == jobs::event::kEmergencyForceCompleted ? "FORCE_RELEASE WITHOUT REFRESH"
                                                                         : nullptr;
      if (name == nullptr) continue;
      action = Value(std::string(name));
      actor = Value(e.actor);
      at = Millis(e.at_ms);
    }
  }
  row->insert(row->end(), {action, actor, at});
  return Status::OK();
}

Result<std::vector<Row>> JobRows(VtabHost* host, const std::map<int, std::string>& eq) {
  if (host->store() == nullptr) return std::vector<Row>{};
  jobs::JobFilter filter;
  filter.limit = jobs::kMaxListLimit;
  if (eq.count(kJobCatalog)) filter.catalog_name = eq.at(kJobCatalog);
  if (eq.count(kJobDatabase)) filter.database_name = eq.at(kJobDatabase);
  if (eq.count(kJobTable)) filter.table_name = eq.at(kJobTable);
  if (eq.count(kJobState)) filter.state = eq.at(kJobState);
  jobs::JobControl control(host->store(), [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  });
  auto jobs_or = control.List(filter, host->principal());
  if (!jobs_or.ok() && jobs_or.status().code() == StatusCode::kInvalidArgument && filter.state) {
    return std::vector<Row>{};  // an unknown State value matches no job
  }
  VIGIL_ASSIGN_OR_RETURN(auto list, std::move(jobs_or));
  if (list.size() >= static_cast<size_t>(jobs::kMaxListLimit)) {
    return Status::ResourceExhausted("more than " + std::to_string(jobs::kMaxListLimit - 1) +
                                     " jobs match; filter vigil_index_jobs by DatabaseName, TableName or State");
  }
  std::sort(list.begin(), list.end(), [](const jobs::JobRecord& a, const jobs::JobRecord& b) { return a.job_id < b.job_id; });
  std::vector<Row> rows;
  for (const auto& j : list) {
    Row r{Value(j.job_id), Value(j.spec.catalog_name), Value(j.spec.database_name), Value(j.spec.table_name),
          Value(j.spec.index_name), Value(std::string(jobs::Name(j.spec.operation))), Millis(j.created_at_ms),
          Millis(j.started_at_ms), Millis(j.finished_at_ms), Value(std::string(jobs::DerivedState(j.state))),
          Value(std::string(jobs::Name(j.state.outcome))), Value(std::string(jobs::Name(j.state.refresh))),
          Value(std::string(jobs::Name(j.state.reconcile))), Value(std::string(jobs::Name(j.state.disposition))),
          j.attempt ? Value(j.attempt->executor_node_id) : Value(), OptText(j.error_message)};
    VIGIL_RETURN_IF_ERROR(LastResolution(host->store(), j, &r));
    rows.push_back(std::move(r));
  }
  return rows;
}

int Connect(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out, char** err) {
  const auto& tables = Tables();
  int kind = -1;
  for (size_t i = 0; i < tables.size(); ++i) {
    if (std::string(argv[0]) == tables[i].name) kind = static_cast<int>(i);
  }
  if (kind < 0) {
    *err = sqlite3_mprintf("unknown metadata module %s", argv[0]);
    return SQLITE_ERROR;
  }
  std::string decl = "CREATE TABLE x(";
  for (size_t c = 0; c < tables[static_cast<size_t>(kind)].columns.size(); ++c) {
    decl += std::string(c ? ", " : "") + "\"" + tables[static_cast<size_t>(kind)].columns[c] + "\"";
  }
  if (tables[static_cast<size_t>(kind)].table_arg) decl += ", table_name HIDDEN";
  decl += ")";
  int rc = sqlite3_declare_vtab(db, decl.c_str());
  if (rc != SQLITE_OK) return rc;
  auto* vt = new MetaVtab();
  vt->host = static_cast<VtabHost*>(aux);
  vt->kind = kind;
  vt->num_columns = static_cast<int>(tables[static_cast<size_t>(kind)].columns.size());
  *out = vt;
  return SQLITE_OK;
}

int Disconnect(sqlite3_vtab* vtab) {
  delete static_cast<MetaVtab*>(vtab);
  return SQLITE_OK;
}

int BestIndex(sqlite3_vtab* base, sqlite3_index_info* info) {
  auto* vt = static_cast<MetaVtab*>(base);
  const bool table_arg = Tables()[static_cast<size_t>(vt->kind)].table_arg;
  int argv = 0;
  std::string cols;
  bool have_table = false;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (c.op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    bool is_table_arg = table_arg && c.iColumn == vt->num_columns;
    bool is_job_filter = !table_arg && (c.iColumn == kJobCatalog || c.iColumn == kJobDatabase ||
                                        c.iColumn == kJobTable || c.iColumn == kJobState);
    if (!is_table_arg && !is_job_filter) continue;
    if (!c.usable) {
      if (is_table_arg) return SQLITE_CONSTRAINT;
      continue;
    }
    info->aConstraintUsage[i].argvIndex = ++argv;
    info->aConstraintUsage[i].omit = is_table_arg ? 1 : 0;
    cols += std::to_string(c.iColumn) + ",";
    have_table = have_table || is_table_arg;
  }
  if (table_arg && !have_table) return SQLITE_CONSTRAINT;  // see vtab_search.cc
  info->idxStr = sqlite3_mprintf("%s", cols.c_str());
  info->needToFreeIdxStr = 1;
  info->estimatedCost = table_arg ? 10 : 1000 / (argv + 1);
  info->estimatedRows = 10;
  return SQLITE_OK;
}

int Open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  *out = new MetaCursor();
  return SQLITE_OK;
}

int Close(sqlite3_vtab_cursor* cur) {
  delete static_cast<MetaCursor*>(cur);
  return SQLITE_OK;
}

Result<std::vector<Row>> Load(MetaVtab* vt, const char* idx_str, int argc, sqlite3_value** argv) {
  std::map<int, std::string> eq;
  sqlite3_value* table = nullptr;
  std::string spec = idx_str ? idx_str : "";
  int arg = 0;
  for (size_t start = 0, comma; (comma = spec.find(',', start)) != std::string::npos; start = comma + 1) {
    int col = std::stoi(spec.substr(start, comma - start));
    if (arg >= argc) break;
    sqlite3_value* v = argv[arg++];
    if (col == vt->num_columns) {
      table = v;
    } else if (sqlite3_value_type(v) == SQLITE_TEXT) {
      eq[col] = reinterpret_cast<const char*>(sqlite3_value_text(v));
    }
  }
  const char* fn = Tables()[static_cast<size_t>(vt->kind)].name;
  if (vt->kind == 3) return JobRows(vt->host, eq);
  VIGIL_ASSIGN_OR_RETURN(auto name, VisibleTable(vt->host, table, fn));
  AccessStats* stats = vt->host->Access(std::string(fn) + ":" + name.ToString());
  stats->table = name.ToString();
  stats->access = fn;
  stats->filter_calls++;
  if (vt->kind == 0) return IndexRows(vt->host, name);
  if (vt->kind == 1) return EntryRows(vt->host, name);
  return OrphanRows(vt->host, name);
}

int Filter(sqlite3_vtab_cursor* base, int, const char* idx_str, int argc, sqlite3_value** argv) {
  auto* vt = static_cast<MetaVtab*>(base->pVtab);
  auto* cur = static_cast<MetaCursor*>(base);
  auto rows = Load(vt, idx_str, argc, argv);
  if (!rows.ok()) return VtabError(base->pVtab, vt->host, rows.status());
  cur->rows = std::move(*rows);
  cur->pos = 0;
  return SQLITE_OK;
}

int Next(sqlite3_vtab_cursor* base) {
  static_cast<MetaCursor*>(base)->pos++;
  return SQLITE_OK;
}

int Eof(sqlite3_vtab_cursor* base) {
  auto* cur = static_cast<MetaCursor*>(base);
  return cur->pos >= cur->rows.size() ? 1 : 0;
}

int ColumnValue(sqlite3_vtab_cursor* base, sqlite3_context* ctx, int col) {
  auto* cur = static_cast<MetaCursor*>(base);
  const Row& row = cur->rows[cur->pos];
  if (col < 0 || col >= static_cast<int>(row.size())) {
    sqlite3_result_null(ctx);
    return SQLITE_OK;
  }
  ResultValue(ctx, row[static_cast<size_t>(col)], DataType::Of(TypeId::kInt64));
  return SQLITE_OK;
}

int Rowid(sqlite3_vtab_cursor* base, sqlite3_int64* rowid) {
  *rowid = static_cast<sqlite3_int64>(static_cast<MetaCursor*>(base)->pos);
  return SQLITE_OK;
}

const sqlite3_module* Module() {
  static const sqlite3_module kModule = [] {
    sqlite3_module m{};
    m.iVersion = 1;
    m.xCreate = nullptr;  // eponymous-only
    m.xConnect = Connect;
    m.xBestIndex = BestIndex;
    m.xDisconnect = Disconnect;
    m.xDestroy = Disconnect;
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

}  // namespace

std::vector<std::pair<const char*, const sqlite3_module*>> MetadataModules() {
  std::vector<std::pair<const char*, const sqlite3_module*>> out;
  for (const auto& t : Tables()) out.emplace_back(t.name, Module());
  return out;
}

}  // namespace vigil::sql::internal
