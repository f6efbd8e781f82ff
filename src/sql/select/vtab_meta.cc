// Eponymous-only metadata modules: vigil_indexes(table), vigil_index_entries(table),
// vigil_orphans(table), vigil_index_jobs and vigil_audit. The table functions read the
// statement's leased snapshot (logical and physical views from one manifest),
// need table SHOW (a table the principal may not see reads as missing) and are
// bounded per seed 000 appendix A: an overflow is an error, never a truncation.
// On an external Lance table vigil_indexes and vigil_index_entries read the
// dataset's newest version through the Lance runner.
// vigil_index_jobs streams the job list (job_listing.h, the rows of SHOW INDEX JOBS)
// page by page from the store, with equality on the names and State and ranges on
// JobId and CreateTime pushed down; vigil_audit streams the FORCE_RELEASE audit
// records to ADMIN and is empty for anyone else (JobControl::ListAudit).
#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "sql/select/job_listing.h"
#include "sql/select/vtab.h"
#include "sql/select/vtab_internal.h"
#include "sql/select/vtab_module.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/common/bounds.h"
#include "vigil/jobs/job_control.h"
#include "vigil/jobs/job_store.h"
#include "vigil/lance/lance_table.h"
#include "vigil/storage/vacuum.h"

namespace vigil::sql::internal {

namespace {

using Row = std::vector<Value>;  // monostate, int64_t or string cells

constexpr size_t kMaxPropertiesBytes = 400;
constexpr size_t kMaxColumnsPerEntry = 64;
constexpr size_t kMaxExternalStringBytes = 1024;

struct MetaVtab : sqlite3_vtab {
  VtabHost* host = nullptr;
  int kind = 0;  // index into kTables
  int num_columns = 0;
};

// Rows come from `source` one at a time (nullopt after the last).
using RowSource = std::function<Result<std::optional<Row>>()>;

struct MetaCursor : sqlite3_vtab_cursor {
  RowSource source;
  std::optional<Row> row;
  sqlite3_int64 rowid = 0;

  Status Filter(MetaVtab* vt, const char* idx_str, int argc, sqlite3_value** argv);
  Status Next(MetaVtab* vt);
  bool Eof() const { return !row; }
  void Column(const MetaVtab& vt, sqlite3_context* ctx, int col) const;
  sqlite3_int64 Rowid() const { return rowid; }
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
      {"vigil_index_jobs", {}, false},  // JobListColumns()
      {"vigil_audit",
       {"AuditId", "Time", "Actor", "Action", "JobId", "CatalogName", "DatabaseName", "TableName", "IndexName",
        "Comment", "Warnings"},
       false},
  };
  return kTables;
}

constexpr int kIndexes = 0, kEntries = 1, kOrphans = 2, kJobs = 3, kAudit = 4;

std::vector<std::string> ColumnsOf(int kind) {
  if (kind == kJobs) return JobListColumns();
  const auto& names = Tables()[static_cast<size_t>(kind)].columns;
  return std::vector<std::string>(names.begin(), names.end());
}

// Whether xBestIndex pushes a constraint of `op` on job list column `column` into the JobFilter.
bool PushedJobConstraint(int column, int op) {
  const bool range = op == SQLITE_INDEX_CONSTRAINT_EQ || op == SQLITE_INDEX_CONSTRAINT_GT ||
                     op == SQLITE_INDEX_CONSTRAINT_GE || op == SQLITE_INDEX_CONSTRAINT_LT ||
                     op == SQLITE_INDEX_CONSTRAINT_LE;
  switch (static_cast<size_t>(column)) {
    case kJobIdColumn:
    case kCreateTimeColumn:
      return range;
    case kCatalogNameColumn:
    case kDatabaseNameColumn:
    case kTableNameColumn:
    case kIndexNameColumn:
    case kStateColumn:
      return op == SQLITE_INDEX_CONSTRAINT_EQ;
    default:
      return false;
  }
}

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
  if (!host->principal().Has(auth::Privilege::kShow, name.catalog, name.db, name.table)) {
    return Status::NotFound("table " + name.ToString() + " does not exist");
  }
  return name;
}

Row Prefix(const vigil::TableName& t) { return Row{Value(t.catalog), Value(t.db), Value(t.table)}; }

// The newest version of `t` when it is an external Lance table (nullopt for Vigil's own).
Result<std::optional<lance::LanceSnapshot>> LanceTable(VtabHost* host, const vigil::TableName& t) {
  catalog::TableCatalog catalog(&host->root(), &host->store()->catalog());
  VIGIL_ASSIGN_OR_RETURN(catalog::TableEntry entry, catalog.Lookup(t));
  if (entry.engine != index::TableEngine::kLance) return std::optional<lance::LanceSnapshot>();
  VIGIL_ASSIGN_OR_RETURN(lance::LanceSnapshot snap, lance::Inspect(entry.locator, lance::ReadOptions(host->lance())));
  return std::optional<lance::LanceSnapshot>(std::move(snap));
}

// The columns of a physical Lance entry: each field's path, "#<id>" for one no field has.
std::string LanceEntryColumns(const lance::LanceEntry& e) {
  std::string out;
  for (size_t k = 0; k < e.columns.size(); ++k) {
    out += (k == 0 ? "" : ",") + (e.columns[k] ? *e.columns[k] : "#" + std::to_string(e.field_ids[k]));
  }
  return out;
}

// vigil_indexes and vigil_index_entries of an external Lance table. vigil_indexes is the
// logical view, one row per exact name as LanceDB lists it, with its count of physical
// entries; it fails with LANCE_INDEX_METADATA_INCONSISTENT when the two views disagree (seed
// 000 section 4.1). vigil_index_entries is one row per physical entry of the manifest, each
// with the dataset version it was built from and how it joins the logical view, also when they
// disagree (its diagnostic rows).
Result<std::vector<Row>> LanceRows(const vigil::TableName& t, const lance::LanceSnapshot& snap, bool entries) {
  std::vector<Row> rows;
  if (entries) {
    const std::vector<lance::LanceConsistency> consistency = lance::EntryConsistency(snap);
    for (size_t k = 0; k < snap.entries.size(); ++k) {
      const lance::LanceEntry& e = snap.entries[k];
      const auto logical = std::find_if(snap.indexes.begin(), snap.indexes.end(),
                                        [&](const lance::LanceIndex& ix) { return ix.name == e.name; });
      Row r = Prefix(t);
      r.insert(r.end(), {Value(e.name), Value(e.uuid), Value(LanceEntryColumns(e)),
                         logical == snap.indexes.end() ? Value() : Value(logical->index_type), Value(e.dataset_version),
                         Value(), Value(std::string(lance::LanceConsistencyName(consistency[k])))});
      rows.push_back(std::move(r));
    }
    return rows;
  }
  VIGIL_RETURN_IF_ERROR(lance::CheckLogicalMetadata(snap));
  for (const lance::LanceIndex& ix : snap.indexes) {
    std::string columns;
    for (const std::string& c : ix.columns) columns += (columns.empty() ? "" : ",") + c;
    const auto count = std::count_if(snap.entries.begin(), snap.entries.end(),
                                     [&](const lance::LanceEntry& e) { return e.name == ix.name; });
    Row r = Prefix(t);
    r.insert(r.end(),
             {Value(ix.name), Value(columns), Value(ix.index_type), ix.indexed_rows ? Value(*ix.indexed_rows) : Value(),
              Value(static_cast<int64_t>(count)), Value(std::string("{}"))});
    rows.push_back(std::move(r));
  }
  return rows;
}

Result<std::vector<Row>> IndexRows(VtabHost* host, const vigil::TableName& t) {
  VIGIL_ASSIGN_OR_RETURN(std::optional<lance::LanceSnapshot> external, LanceTable(host, t));
  if (external) return LanceRows(t, *external, /*entries=*/false);
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
  VIGIL_ASSIGN_OR_RETURN(std::optional<lance::LanceSnapshot> external, LanceTable(host, t));
  if (external) return LanceRows(t, *external, /*entries=*/true);
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

// One pushed constraint: a column, a SQLite operator and its value.
struct JobConstraint {
  int column = 0;
  int op = 0;
  sqlite3_value* value = nullptr;
};

// Narrows `f` by one constraint; SQLite still checks every row (the pushdown may be wider).
void PushJobConstraint(const JobConstraint& c, jobs::JobFilter* f) {
  const int type = sqlite3_value_type(c.value);
  if (c.column == static_cast<int>(kJobIdColumn)) {
    if (type != SQLITE_INTEGER) return;
    const int64_t v = sqlite3_value_int64(c.value);
    const bool lower =
        c.op == SQLITE_INDEX_CONSTRAINT_EQ || c.op == SQLITE_INDEX_CONSTRAINT_GE || c.op == SQLITE_INDEX_CONSTRAINT_GT;
    const bool upper =
        c.op == SQLITE_INDEX_CONSTRAINT_EQ || c.op == SQLITE_INDEX_CONSTRAINT_LE || c.op == SQLITE_INDEX_CONSTRAINT_LT;
    if (lower) {
      const bool after = c.op == SQLITE_INDEX_CONSTRAINT_GT && v < std::numeric_limits<int64_t>::max();
      const int64_t lo = after ? v + 1 : v;
      f->min_job_id = std::max(f->min_job_id.value_or(lo), lo);
    }
    if (upper) {
      const bool before = c.op == SQLITE_INDEX_CONSTRAINT_LT && v > std::numeric_limits<int64_t>::min();
      const int64_t hi = before ? v - 1 : v;
      f->max_job_id = std::min(f->max_job_id.value_or(hi), hi);
    }
    return;
  }
  if (type != SQLITE_TEXT) return;
  const std::string text = reinterpret_cast<const char*>(sqlite3_value_text(c.value));
  if (c.column == static_cast<int>(kCreateTimeColumn)) {
    CompareOp op = c.op == SQLITE_INDEX_CONSTRAINT_GT   ? CompareOp::kGt
                   : c.op == SQLITE_INDEX_CONSTRAINT_GE ? CompareOp::kGe
                   : c.op == SQLITE_INDEX_CONSTRAINT_LT ? CompareOp::kLt
                   : c.op == SQLITE_INDEX_CONSTRAINT_LE ? CompareOp::kLe
                                                        : CompareOp::kEq;
    AddCreateTimeBounds(op, text, f);
    return;
  }
  std::optional<std::string>* field = nullptr;
  switch (static_cast<size_t>(c.column)) {
    case kCatalogNameColumn:
      field = &f->catalog_name;
      break;
    case kDatabaseNameColumn:
      field = &f->database_name;
      break;
    case kTableNameColumn:
      field = &f->table_name;
      break;
    case kIndexNameColumn:
      field = &f->index_name;
      break;
    case kStateColumn:
      field = &f->state;
      break;
    default:
      return;
  }
  if (!*field) *field = text;
}

jobs::JobControl Control(VtabHost* host) { return jobs::JobControl(host->store()); }

RowSource NoRows() {
  return [] { return Result<std::optional<Row>>(std::optional<Row>()); };
}

// The job list the principal may see, oldest job first, read from the store a page at a time.
Result<RowSource> JobRows(VtabHost* host, const std::vector<JobConstraint>& constraints) {
  if (host->store() == nullptr) return NoRows();
  jobs::JobFilter filter;
  filter.order = jobs::JobOrder::kOldestFirst;
  filter.limit = jobs::kMaxListLimit;
  for (const JobConstraint& c : constraints) PushJobConstraint(c, &filter);
  Result<jobs::JobCursor> cursor = Control(host).Scan(filter, host->principal());
  if (!cursor.ok() && cursor.status().code() == StatusCode::kInvalidArgument && filter.state) {
    return NoRows();  // an unknown State value matches no job
  }
  VIGIL_RETURN_IF_ERROR(cursor.status());
  auto shared = std::make_shared<jobs::JobCursor>(std::move(*cursor));
  jobs::JobStore* store = host->store();
  return RowSource([shared, store]() -> Result<std::optional<Row>> {
    VIGIL_ASSIGN_OR_RETURN(std::optional<jobs::JobRecord> job, shared->Next());
    if (!job) return std::optional<Row>();
    VIGIL_ASSIGN_OR_RETURN(Row row, JobListRow(*store, *job));
    return std::optional<Row>(std::move(row));
  });
}

std::string WarningsJson(const std::vector<std::string>& warnings) {
  std::string out = "[";
  for (const std::string& w : warnings) {
    out += out.size() > 1 ? ", \"" : "\"";
    for (char c : w) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += "\"";
  }
  return out + "]";
}

// vigil_audit: the FORCE_RELEASE audit records, oldest first, a page at a time.
RowSource AuditRows(VtabHost* host) {
  struct State {
    std::vector<jobs::AuditRecord> page;
    size_t pos = 0;
    int64_t after = 0;
    bool done = false;
  };
  auto st = std::make_shared<State>();
  return [st, host]() -> Result<std::optional<Row>> {
    if (st->pos == st->page.size()) {
      if (st->done || host->store() == nullptr) return std::optional<Row>();
      VIGIL_ASSIGN_OR_RETURN(st->page, Control(host).ListAudit(st->after, jobs::kMaxListLimit, host->principal()));
      st->pos = 0;
      st->done = st->page.size() < static_cast<size_t>(jobs::kMaxListLimit);
      if (st->page.empty()) return std::optional<Row>();
      st->after = st->page.back().audit_id;
    }
    const jobs::AuditRecord& a = st->page[st->pos++];
    return std::optional<Row>(Row{Value(a.audit_id), Value(FormatJobTime(a.at_ms)), Value(a.actor), Value(a.action),
                                  Value(a.job_id), Value(a.catalog_name), Value(a.database_name), Value(a.table_name),
                                  Value(a.index_name), Value(a.note), Value(WarningsJson(a.warnings))});
  };
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
  const std::vector<std::string> columns = ColumnsOf(kind);
  std::string decl = "CREATE TABLE x(";
  for (size_t c = 0; c < columns.size(); ++c) decl += std::string(c ? ", " : "") + "\"" + columns[c] + "\"";
  if (tables[static_cast<size_t>(kind)].table_arg) decl += ", table_name HIDDEN";
  decl += ")";
  int rc = sqlite3_declare_vtab(db, decl.c_str());
  if (rc != SQLITE_OK) return rc;
  auto* vt = new MetaVtab();
  vt->host = static_cast<VtabHost*>(aux);
  vt->kind = kind;
  vt->num_columns = static_cast<int>(columns.size());
  *out = vt;
  return SQLITE_OK;
}

int Disconnect(sqlite3_vtab* vtab) {
  delete static_cast<MetaVtab*>(vtab);
  return SQLITE_OK;
}

// idxStr lists the constraints passed to xFilter as "column:op," in argv order.
int BestIndex(sqlite3_vtab* base, sqlite3_index_info* info) {
  auto* vt = static_cast<MetaVtab*>(base);
  const bool table_arg = Tables()[static_cast<size_t>(vt->kind)].table_arg;
  int argv = 0;
  std::string cols;
  bool have_table = false;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    bool is_table_arg = table_arg && c.iColumn == vt->num_columns && c.op == SQLITE_INDEX_CONSTRAINT_EQ;
    bool is_job_filter = vt->kind == kJobs && PushedJobConstraint(c.iColumn, c.op);
    if (!is_table_arg && !is_job_filter) continue;
    if (!c.usable) {
      if (is_table_arg) return SQLITE_CONSTRAINT;
      continue;
    }
    PassConstraint(info, i, /*omit=*/is_table_arg, &argv);
    cols += std::to_string(c.iColumn) + ":" + std::to_string(c.op) + ",";
    have_table = have_table || is_table_arg;
  }
  if (table_arg && !have_table) return SQLITE_CONSTRAINT;  // see vtab_search.cc
  // The job list and the audit come in JobId / AuditId order.
  if (!table_arg) ConsumeOrderBy(info, /*column=*/0, /*desc=*/false);
  SetPlan(info, cols);
  info->estimatedCost = table_arg ? 10 : 1000 / (argv + 1);
  info->estimatedRows = 10;
  return SQLITE_OK;
}

RowSource FromVector(std::vector<Row> rows) {
  auto all = std::make_shared<std::vector<Row>>(std::move(rows));
  auto pos = std::make_shared<size_t>(0);
  return [all, pos]() -> Result<std::optional<Row>> {
    if (*pos == all->size()) return std::optional<Row>();
    return std::optional<Row>(std::move((*all)[(*pos)++]));
  };
}

Result<RowSource> Load(MetaVtab* vt, const char* idx_str, int argc, sqlite3_value** argv) {
  std::vector<JobConstraint> constraints;
  sqlite3_value* table = nullptr;
  const std::string spec = idx_str;
  int arg = 0;
  for (size_t start = 0, comma; (comma = spec.find(',', start)) != std::string::npos; start = comma + 1) {
    const std::string item = spec.substr(start, comma - start);
    const size_t colon = item.find(':');
    if (colon == std::string::npos || arg >= argc) break;
    const int col = std::stoi(item.substr(0, colon));
    const int op = std::stoi(item.substr(colon + 1));
    sqlite3_value* v = argv[arg++];
    if (col == vt->num_columns) {
      table = v;
    } else {
      constraints.push_back({col, op, v});
    }
  }
  const char* fn = Tables()[static_cast<size_t>(vt->kind)].name;
  if (vt->kind == kJobs) return JobRows(vt->host, constraints);
  if (vt->kind == kAudit) return AuditRows(vt->host);
  VIGIL_ASSIGN_OR_RETURN(auto name, VisibleTable(vt->host, table, fn));
  AccessStats* stats = vt->host->Access(std::string(fn) + ":" + name.ToString());
  stats->table = name.ToString();
  stats->access = fn;
  stats->filter_calls++;
  Result<std::vector<Row>> rows = vt->kind == kIndexes   ? IndexRows(vt->host, name)
                                  : vt->kind == kEntries ? EntryRows(vt->host, name)
                                                         : OrphanRows(vt->host, name);
  VIGIL_RETURN_IF_ERROR(rows.status());
  return FromVector(std::move(*rows));
}

Status MetaCursor::Filter(MetaVtab* vt, const char* idx_str, int argc, sqlite3_value** argv) {
  VIGIL_ASSIGN_OR_RETURN(source, Load(vt, idx_str, argc, argv));
  rowid = 0;
  return Next(vt);
}

// Moves to the source's next row.
Status MetaCursor::Next(MetaVtab*) {
  Result<std::optional<Row>> next = (source ? source : NoRows())();
  if (!next.ok()) {
    row.reset();
    return next.status();
  }
  row = std::move(*next);
  ++rowid;
  return Status::OK();
}

void MetaCursor::Column(const MetaVtab&, sqlite3_context* ctx, int col) const {
  if (col < 0 || col >= static_cast<int>(row->size())) {
    sqlite3_result_null(ctx);
    return;
  }
  ResultValue(ctx, (*row)[static_cast<size_t>(col)], DataType::Of(TypeId::kInt64));
}

const sqlite3_module* Module() {
  // Eponymous-only: no xCreate.
  static const sqlite3_module kModule = ReadOnlyModule<MetaVtab, MetaCursor>({nullptr, Connect, BestIndex, Disconnect});
  return &kModule;
}

}  // namespace

std::vector<std::pair<const char*, const sqlite3_module*>> MetadataModules() {
  std::vector<std::pair<const char*, const sqlite3_module*>> out;
  for (const auto& t : Tables()) out.emplace_back(t.name, Module());
  return out;
}

}  // namespace vigil::sql::internal
