#include <algorithm>
#include <cmath>
#include <cstring>

#include "sql/select/vtab.h"

#include <sstream>

#include "sql/select/statement_deadline.h"
#include "sql/select/vtab_internal.h"
#include "sql/select/vtab_module.h"
#include "vigil/storage/fragment.h"

namespace vigil::sql::internal {

std::string VtabName(VtabKind kind, const vigil::TableName& table) {
  const char* prefix = kind == VtabKind::kTable          ? "vigil:"
                       : kind == VtabKind::kVectorSearch ? "vigil_vs:"
                                                         : "vigil_fts:";
  return prefix + table.ToString();
}

int VtabError(sqlite3_vtab* vtab, VtabHost* host, const Status& status) {
  sqlite3_free(vtab->zErrMsg);
  vtab->zErrMsg = sqlite3_mprintf("%s", status.message().c_str());
  if (host) host->SetError(status);
  return SQLITE_ERROR;
}

namespace {

std::optional<int64_t> ExactInteger(sqlite3_value* v) {
  switch (sqlite3_value_type(v)) {
    case SQLITE_INTEGER:
      return sqlite3_value_int64(v);
    case SQLITE_FLOAT: {
      double d = sqlite3_value_double(v);
      if (std::floor(d) != d || std::fabs(d) > 9.0e15) return std::nullopt;
      return static_cast<int64_t>(d);
    }
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<vigil::Value> ToVigilValue(sqlite3_value* v, const DataType& type) {
  const int t = sqlite3_value_type(v);
  if (t == SQLITE_NULL) return std::nullopt;
  switch (type.id) {
    case TypeId::kBool: {
      auto i = ExactInteger(v);
      if (!i || (*i != 0 && *i != 1)) return std::nullopt;
      return vigil::Value(*i != 0);
    }
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kDate:
    case TypeId::kTimestamp: {
      auto i = ExactInteger(v);
      if (!i) return std::nullopt;
      return vigil::Value(*i);
    }
    case TypeId::kFloat32:
    case TypeId::kFloat64:
      if (t != SQLITE_INTEGER && t != SQLITE_FLOAT) return std::nullopt;
      return vigil::Value(sqlite3_value_double(v));
    case TypeId::kString:
      if (t != SQLITE_TEXT) return std::nullopt;
      return vigil::Value(std::string(reinterpret_cast<const char*>(sqlite3_value_text(v)),
                                      static_cast<size_t>(sqlite3_value_bytes(v))));
    default:
      return std::nullopt;  // DECIMAL and VECTOR are not pushed
  }
}

void ResultValue(sqlite3_context* ctx, const vigil::Value& v, const DataType& type) {
  if (std::holds_alternative<std::monostate>(v)) {
    sqlite3_result_null(ctx);
  } else if (const bool* b = std::get_if<bool>(&v)) {
    sqlite3_result_int64(ctx, *b ? 1 : 0);
  } else if (const int64_t* i = std::get_if<int64_t>(&v)) {
    if (type.id == TypeId::kDecimal) {
      sqlite3_result_double(ctx, static_cast<double>(*i) / std::pow(10.0, type.scale));
    } else {
      sqlite3_result_int64(ctx, *i);
    }
  } else if (const double* d = std::get_if<double>(&v)) {
    sqlite3_result_double(ctx, *d);
  } else if (const std::string* s = std::get_if<std::string>(&v)) {
    sqlite3_result_text(ctx, s->data(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
  } else {
    const auto& f = std::get<std::vector<float>>(v);
    sqlite3_result_blob(ctx, f.data(), static_cast<int>(f.size() * sizeof(float)), SQLITE_TRANSIENT);
  }
}

const char* SqliteType(const DataType& type) {
  switch (type.id) {
    case TypeId::kFloat32:
    case TypeId::kFloat64:
    case TypeId::kDecimal:
      return "REAL";
    case TypeId::kString:
      return "TEXT";
    case TypeId::kVector:
      return kVectorDeclaredType.data();
    default:
      return "INTEGER";
  }
}

std::string DeclareColumns(const Schema& schema, const std::string& extra) {
  std::string sql = "CREATE TABLE x(";
  for (size_t i = 0; i < schema.num_fields(); ++i) {
    const Field& f = schema.field(i);
    if (i > 0) sql += ", ";
    std::string quoted = "\"";
    for (char c : f.name) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    sql += quoted + "\" " + SqliteType(f.type);
  }
  if (!extra.empty()) sql += (schema.num_fields() > 0 ? ", " : "") + extra;
  return sql + ")";
}

using Op = index::ScalarPredicate::Op;

std::optional<Op> PushableOp(int sqlite_op, const DataType& type) {
  if (type.id == TypeId::kVector || type.id == TypeId::kDecimal) return std::nullopt;
  switch (sqlite_op) {
    case SQLITE_INDEX_CONSTRAINT_EQ:
      return Op::kEq;
    case SQLITE_INDEX_CONSTRAINT_LT:
      return Op::kLt;
    case SQLITE_INDEX_CONSTRAINT_LE:
      return Op::kLe;
    case SQLITE_INDEX_CONSTRAINT_GT:
      return Op::kGt;
    case SQLITE_INDEX_CONSTRAINT_GE:
      return Op::kGe;
    case SQLITE_INDEX_CONSTRAINT_ISNULL:
      return Op::kIsNull;
    default:
      return std::nullopt;
  }
}

std::string EncodePushed(const std::vector<PushedConstraint>& pushed, uint64_t col_used) {
  std::string out = std::to_string(col_used);
  for (const auto& p : pushed) {
    out +=
        "|" + std::to_string(p.column) + ":" + std::to_string(static_cast<int>(p.op)) + ":" + (p.in_list ? "1" : "0");
  }
  return out;
}

std::vector<PushedConstraint> DecodePushed(const std::string& text, uint64_t* col_used) {
  std::vector<PushedConstraint> out;
  std::istringstream in(text.substr(0, text.find('#')));
  std::string part;
  bool first = true;
  while (std::getline(in, part, '|')) {
    if (first) {
      *col_used = part.empty() ? ~uint64_t{0} : std::stoull(part);
      first = false;
      continue;
    }
    PushedConstraint p;
    int op = 0;
    int in_list = 0;
    if (std::sscanf(part.c_str(), "%d:%d:%d", &p.column, &op, &in_list) != 3) continue;
    p.op = static_cast<Op>(op);
    p.in_list = in_list != 0;
    out.push_back(p);
  }
  if (first) *col_used = ~uint64_t{0};
  return out;
}

namespace {

const char* OpText(Op op) {
  switch (op) {
    case Op::kEq:
      return "=";
    case Op::kLt:
      return "<";
    case Op::kLe:
      return "<=";
    case Op::kGt:
      return ">";
    case Op::kGe:
      return ">=";
    case Op::kIn:
      return "IN";
    case Op::kBetween:
      return "BETWEEN";
    case Op::kIsNull:
      return "IS NULL";
  }
  return "?";
}

// Calls `fn` on each value of one xFilter argument: the IN list when processed all at
// once, else the value itself. (IN list values are valid only until the next one is read.)
template <typename Fn>
void ForEachArgValue(sqlite3_value* arg, bool in_list, Fn fn) {
  if (in_list) {
    sqlite3_value* v = nullptr;
    int rc = sqlite3_vtab_in_first(arg, &v);
    if (rc == SQLITE_OK) {
      for (; rc == SQLITE_OK && v != nullptr; rc = sqlite3_vtab_in_next(arg, &v)) fn(v);
      return;
    }
  }
  fn(arg);
}

}  // namespace

std::string DescribePushed(const Schema& schema, const std::vector<PushedConstraint>& pushed) {
  std::string out;
  for (const auto& p : pushed) {
    if (!out.empty()) out += " AND ";
    out += schema.field(static_cast<size_t>(p.column)).name + " ";
    if (p.op == Op::kIsNull) {
      out += "IS NULL";
    } else {
      out += p.in_list ? std::string("IN (?)") : std::string(OpText(p.op)) + " ?";
    }
  }
  return out;
}

Result<std::vector<query::ColumnPredicate>> BuildConjuncts(const Schema& schema,
                                                           const std::vector<PushedConstraint>& pushed,
                                                           sqlite3_value** argv, int argc, bool exact, bool* empty) {
  std::vector<query::ColumnPredicate> out;
  int arg = 0;
  for (const auto& p : pushed) {
    const Field& f = schema.field(static_cast<size_t>(p.column));
    query::ColumnPredicate cp{f.name, {p.op, {}}};
    if (p.op == Op::kIsNull) {
      out.push_back(std::move(cp));
      continue;
    }
    if (arg >= argc) return Status::Internal("pushed constraint without a value");
    bool usable = true;
    ForEachArgValue(argv[arg++], p.in_list, [&](sqlite3_value* v) {
      if (!usable || sqlite3_value_type(v) == SQLITE_NULL) return;  // NULL is never equal to anything
      auto value = ToVigilValue(v, f.type);
      if (!value) {
        usable = false;
        return;
      }
      cp.predicate.values.push_back(std::move(*value));
    });
    if (!usable && exact) {
      return Status::InvalidArgument("value for column '" + f.name + "' is not a " + f.type.ToString());
    }
    if (!usable) continue;
    if (cp.predicate.values.empty()) {
      *empty = true;
      continue;
    }
    if (cp.predicate.values.size() > 1 || p.in_list) cp.predicate.op = Op::kIn;
    out.push_back(std::move(cp));
  }
  return out;
}

Result<RecordBatch> TakeRowsBlocked(const query::TableSnapshot& snap, const std::vector<RowAddress>& rows,
                                    const std::vector<std::string>& columns) {
  const Schema& schema = *snap.manifest().schema;
  std::vector<Field> fields;
  for (const auto& c : columns) {
    auto idx = schema.IndexOf(c);
    if (!idx) return Status::InvalidArgument("unknown column '" + c + "'");
    fields.push_back(schema.field(*idx));
  }
  VIGIL_ASSIGN_OR_RETURN(SchemaPtr projection, Schema::Make(fields));
  RecordBatch out = RecordBatch::Empty(projection);
  std::shared_ptr<FragmentReader> reader;
  uint32_t fragment = 0;
  std::vector<std::shared_ptr<const Column>> blocks(fields.size());
  std::vector<size_t> block_index(fields.size(), SIZE_MAX);
  std::vector<bool> missing(fields.size(), false);
  for (RowAddress row : rows) {
    const FragmentMeta* meta = snap.manifest().FindFragment(RowFragment(row));
    if (meta == nullptr || RowOffset(row) >= meta->num_rows) {
      return Status::InvalidArgument("row address " + std::to_string(row) + " is not in version " +
                                     std::to_string(snap.version()));
    }
    if (!reader || fragment != RowFragment(row)) {
      VIGIL_ASSIGN_OR_RETURN(reader, snap.Fragment(RowFragment(row)));
      fragment = RowFragment(row);
      std::fill(block_index.begin(), block_index.end(), SIZE_MAX);
    }
    const size_t block = RowOffset(row) / reader->rows_per_block();
    const size_t offset = RowOffset(row) % reader->rows_per_block();
    for (size_t c = 0; c < fields.size(); ++c) {
      if (block_index[c] != block) {
        VIGIL_RETURN_IF_ERROR(CheckStatementDeadline());
        auto b = reader->ReadBlock(fields[c].id, block);
        missing[c] = !b.ok() && b.status().code() == StatusCode::kNotFound;  // column added later: NULL
        if (!b.ok() && !missing[c]) return b.status();
        blocks[c] = missing[c] ? nullptr : *b;
        block_index[c] = block;
      }
      if (missing[c]) {
        out.columns[c].AppendNull();
      } else {
        out.columns[c].AppendRange(*blocks[c], offset, offset + 1);
      }
    }
    out.row_addresses.push_back(row);
    ++out.num_rows;
  }
  return out;
}

int ConnectVigilVtab(sqlite3* db, VtabHost* host, int argc, const char* const* argv, const std::string& extra,
                     sqlite3_vtab** out, char** err) {
  if (argc < 4) {
    *err = sqlite3_mprintf("a Vigil virtual table needs its table name");
    return SQLITE_ERROR;
  }
  std::string name = argv[3];
  if (name.size() >= 2 && name.front() == '\'' && name.back() == '\'') name = name.substr(1, name.size() - 2);
  auto parsed = vigil::ParseTableName(name);
  if (!parsed.ok()) {
    *err = sqlite3_mprintf("%s", parsed.status().message().c_str());
    return SQLITE_ERROR;
  }
  auto snap = host->Snapshot(*parsed);
  if (!snap.ok()) {
    host->SetError(snap.status());
    *err = sqlite3_mprintf("%s", snap.status().message().c_str());
    return SQLITE_ERROR;
  }
  auto vt = std::make_unique<VigilVtab>();
  vt->host = host;
  vt->table = *parsed;
  vt->schema = (*snap)->manifest().schema;
  int rc = sqlite3_declare_vtab(db, DeclareColumns(*vt->schema, extra).c_str());
  if (rc != SQLITE_OK) {
    *err = sqlite3_mprintf("cannot declare %s: %s", name.c_str(), sqlite3_errmsg(db));
    return rc;
  }
  *out = vt.release();
  return SQLITE_OK;
}

int DisconnectVigilVtab(sqlite3_vtab* vtab) {
  delete static_cast<VigilVtab*>(vtab);
  return SQLITE_OK;
}

Status RegisterModules(sqlite3* db, VtabHost* host) {
  auto reg = [&](const char* name, const sqlite3_module* m) -> Status {
    int rc = sqlite3_create_module_v2(db, name, m, host, nullptr);
    if (rc != SQLITE_OK)
      return Status::Internal(std::string("cannot register module ") + name + ": " + sqlite3_errmsg(db));
    return Status::OK();
  };
  VIGIL_RETURN_IF_ERROR(reg("vigil_table", TableModule()));
  VIGIL_RETURN_IF_ERROR(reg("vigil_vector_search", VectorSearchModule()));
  VIGIL_RETURN_IF_ERROR(reg("vigil_fts_search", FtsSearchModule()));
  for (const auto& [name, module] : MetadataModules()) VIGIL_RETURN_IF_ERROR(reg(name, module));
  return Status::OK();
}

void PassConstraint(sqlite3_index_info* info, int i, bool omit, int* argc) {
  info->aConstraintUsage[i].argvIndex = ++*argc;
  info->aConstraintUsage[i].omit = omit ? 1 : 0;
}

void SetPlan(sqlite3_index_info* info, const std::string& idx_str) {
  info->idxStr = sqlite3_mprintf("%s", idx_str.c_str());
  info->needToFreeIdxStr = 1;
}

void ConsumeOrderBy(sqlite3_index_info* info, int column, bool desc) {
  if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn == column && (info->aOrderBy[0].desc != 0) == desc) {
    info->orderByConsumed = 1;
  }
}

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

}  // namespace vigil::sql::internal
