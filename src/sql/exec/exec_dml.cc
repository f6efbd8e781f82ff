// Rows: INSERT ... VALUES, COPY ... FROM, DELETE ... WHERE and UPDATE ... SET.
// Each statement is one commit; any error before it leaves the table unchanged.
// COPY opens its file once (copy_source.h) and every pass reads that descriptor.
#include <map>
#include <set>

#include "sql/exec/copy_source.h"
#include "sql/exec/exec_internal.h"
#include "vigil/ingest/ingest.h"
#include "vigil/query/snapshot.h"

namespace vigil::sql {

namespace {

std::string Rows(uint64_t n, std::string_view verb) {
  return std::to_string(n) + (n == 1 ? " row " : " rows ") + std::string(verb);
}

// Schema positions of an INSERT's column list (every field when empty).
Result<std::vector<size_t>> InsertTargets(const Schema& schema, const InsertStatement& s, const std::string& table) {
  std::vector<size_t> out;
  if (s.columns.empty()) {
    for (size_t i = 0; i < schema.num_fields(); ++i) out.push_back(i);
    return out;
  }
  std::set<size_t> seen;
  for (const std::string& c : s.columns) {
    std::optional<size_t> i = schema.IndexOf(c);
    if (!i) return Status::InvalidArgument("table " + table + " has no column '" + c + "'");
    if (!seen.insert(*i).second) return Status::InvalidArgument("column '" + c + "' is listed twice");
    out.push_back(*i);
  }
  for (size_t i = 0; i < schema.num_fields(); ++i) {
    if (!seen.count(i) && !schema.field(i).nullable) {
      return Status::InvalidArgument("column '" + schema.field(i).name + "' is NOT NULL and has no value");
    }
  }
  return out;
}

Status CheckNotNull(const Field& f, const vigil::Value& v, size_t row) {
  if (!IsNull(v) || f.nullable) return Status::OK();
  return Status::InvalidArgument("row " + std::to_string(row) + ", column '" + f.name +
                                 "': NULL into a NOT NULL column");
}

Result<RecordBatch> InsertBatch(const SchemaPtr& schema, const InsertStatement& s, const std::string& table) {
  VIGIL_ASSIGN_OR_RETURN(std::vector<size_t> targets, InsertTargets(*schema, s, table));
  if (!s.rows.empty() && s.rows[0].size() != targets.size()) {
    return Status::InvalidArgument("rows have " + std::to_string(s.rows[0].size()) + " values, table " + table +
                                   " has " + std::to_string(targets.size()) + " columns");
  }
  RecordBatch batch = RecordBatch::Empty(schema);
  for (size_t r = 0; r < s.rows.size(); ++r) {
    std::vector<vigil::Value> row(schema->num_fields());
    for (size_t k = 0; k < targets.size(); ++k) {
      const Field& f = schema->field(targets[k]);
      Result<vigil::Value> v = CoerceLiteral(s.rows[r][k], f.type);
      if (!v.ok()) return v.status().WithContext("row " + std::to_string(r + 1) + ", column '" + f.name + "'");
      VIGIL_RETURN_IF_ERROR(CheckNotNull(f, *v, r + 1));
      row[targets[k]] = std::move(*v);
    }
    Status st = batch.AppendRow(row);
    if (!st.ok()) return st.WithContext("row " + std::to_string(r + 1));
  }
  return batch;
}

struct Target {
  vigil::TableName name;
  std::shared_ptr<Dataset> dataset;
};

Result<Target> WritableTable(ExecContext& ctx, const TableRef& table) {
  VIGIL_ASSIGN_OR_RETURN(vigil::TableName name, ResolveTable(ctx, table));
  VIGIL_RETURN_IF_ERROR(Authorize(ctx, name, auth::Privilege::kAlter));
  VIGIL_ASSIGN_OR_RETURN(auto ds, OpenTable(ctx, name));
  return Target{name, ds};
}

Status CheckAssignments(const Schema& schema, const UpdateStatement& s, const std::string& table) {
  std::set<size_t> seen;
  for (const Assignment& a : s.assignments) {
    std::optional<size_t> i = schema.IndexOf(a.column);
    if (!i) return Status::InvalidArgument("table " + table + " has no column '" + a.column + "'");
    if (!seen.insert(*i).second) return Status::InvalidArgument("column '" + a.column + "' is assigned twice");
  }
  return Status::OK();
}

// The updated rows: the old rows with the assignments applied (read from the old values).
Result<RecordBatch> UpdatedBatch(const RecordBatch& old, const UpdateStatement& s, const std::string& table) {
  const SchemaPtr& schema = old.schema;
  RecordBatch out = RecordBatch::Empty(schema);
  BatchRow row(old, table);
  for (size_t r = 0; r < old.num_rows; ++r) {
    row.set_row(r);
    std::vector<vigil::Value> values;
    for (const Column& c : old.columns) values.push_back(c.ValueAt(r));
    for (const Assignment& a : s.assignments) {
      size_t i = *schema->IndexOf(a.column);
      const Field& f = schema->field(i);
      Result<vigil::Value> v = EvalForColumn(a.value, row, f.type);
      if (!v.ok()) return v.status().WithContext("row " + std::to_string(r + 1) + ", column '" + f.name + "'");
      VIGIL_RETURN_IF_ERROR(CheckNotNull(f, *v, r + 1));
      values[i] = std::move(*v);
    }
    Status st = out.AppendRow(values);
    if (!st.ok()) return st.WithContext("row " + std::to_string(r + 1));
  }
  return out;
}

// Deletes `rows` and appends `batch` in one commit.
Result<std::shared_ptr<Dataset>> CommitUpdate(const Dataset& ds, const std::vector<RowAddress>& rows,
                                              RecordBatch batch) {
  Transaction txn;
  txn.props.operation = "UPDATE";
  auto reader = MakeBatchReader(ds.schema(), {std::move(batch)});
  VIGIL_ASSIGN_OR_RETURN(txn.added_fragments, ds.WriteFragments(reader.get()));
  std::map<uint32_t, DeletionVector> by_fragment;
  for (RowAddress a : rows) by_fragment[RowFragment(a)].Add(RowOffset(a));
  for (const auto& entry : by_fragment) {
    VIGIL_ASSIGN_OR_RETURN(DeletionFileRef ref, ds.WriteDeletionFile(entry.first, entry.second));
    txn.updated_deletions.emplace_back(entry.first, std::move(ref));
  }
  VIGIL_RETURN_IF_ERROR(ds.fs()->SyncDir(ds.AbsPath("_deletions")));
  return ds.Commit(std::move(txn));
}

}  // namespace

Result<ResultSet> ExecInsert(ExecContext& ctx, const InsertStatement& s) {
  VIGIL_ASSIGN_OR_RETURN(Target t, WritableTable(ctx, s.table));
  const std::string table = t.name.ToString();
  VIGIL_ASSIGN_OR_RETURN(RecordBatch batch, InsertBatch(t.dataset->schema(), s, table));
  const uint64_t n = batch.num_rows;
  TransactionProperties props;
  props.operation = "INSERT";
  auto reader = MakeBatchReader(t.dataset->schema(), {std::move(batch)});
  VIGIL_RETURN_IF_ERROR(t.dataset->Append(reader.get(), props).status());
  ctx.Invalidate(t.name);
  ResultSet r;
  r.message = Rows(n, "inserted");
  return r;
}

Result<ResultSet> ExecAppend(ExecContext& ctx, const TableRef& table, const Session::RowsFactory& make_rows) {
  VIGIL_ASSIGN_OR_RETURN(Target t, WritableTable(ctx, table));
  VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<RecordBatchReader> rows, make_rows(t.dataset->schema()));
  // Counts what the dataset takes, batch by batch.
  class Counting : public RecordBatchReader {
   public:
    explicit Counting(RecordBatchReader* in) : in_(in) {}
    SchemaPtr schema() const override { return in_->schema(); }
    Result<std::optional<RecordBatch>> Next() override {
      VIGIL_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, in_->Next());
      if (batch) rows_ += batch->num_rows;
      return batch;
    }
    uint64_t rows() const { return rows_; }

   private:
    RecordBatchReader* in_;
    uint64_t rows_ = 0;
  } counting(rows.get());
  TransactionProperties props;
  props.operation = "APPEND";
  VIGIL_RETURN_IF_ERROR(t.dataset->Append(&counting, props).status());
  ctx.Invalidate(t.name);
  ResultSet r;
  r.message = Rows(counting.rows(), "inserted");
  return r;
}

Result<std::shared_ptr<Dataset>> ExecOpenTableVersion(ExecContext& ctx, const TableRef& table,
                                                      std::optional<uint64_t> version) {
  VIGIL_ASSIGN_OR_RETURN(vigil::TableName name, ResolveTable(ctx, table));
  VIGIL_RETURN_IF_ERROR(Authorize(ctx, name, auth::Privilege::kShow));
  VIGIL_ASSIGN_OR_RETURN(std::shared_ptr<Dataset> newest, OpenTable(ctx, name));
  if (!version || *version == newest->version()) return newest;
  if (*version > newest->version()) {
    return Status::NotFound("table " + name.ToString() + " has no version " + std::to_string(*version) +
                            " (its newest is " + std::to_string(newest->version()) + ")");
  }
  return Dataset::Open(newest->path(), *version, newest->options());
}

Result<ResultSet> ExecCopy(ExecContext& ctx, const CopyStatement& s) {
  VIGIL_ASSIGN_OR_RETURN(vigil::TableName name, ResolveTable(ctx, s.table));
  VIGIL_RETURN_IF_ERROR(Authorize(ctx, name, auth::Privilege::kAlter));
  VIGIL_ASSIGN_OR_RETURN(auto input, OpenCopySource(ctx, s.path));
  return ExecCopyInput(ctx, s, std::move(input));
}

Result<ResultSet> ExecCopyInput(ExecContext& ctx, const CopyStatement& s, std::shared_ptr<const RandomAccessFile> input,
                                const jobs::RequestClaim& request, bool create_missing) {
  VIGIL_ASSIGN_OR_RETURN(vigil::TableName name, ResolveTable(ctx, s.table));
  VIGIL_RETURN_IF_ERROR(Authorize(ctx, name, auth::Privilege::kAlter));
  ImportOptions options;
  options.create = create_missing;
  options.props.operation = "COPY";
  options.props.idempotency_key = request.token;
  if (request.confirm) options.before_commit = [&] { return ctx.store->ConfirmRequest(request); };
  if (s.format) {
    VIGIL_ASSIGN_OR_RETURN(options.ingest.format, ParseIngestFormat(CopyFormatName(*s.format)));
  } else {
    VIGIL_ASSIGN_OR_RETURN(options.ingest.format, DetectIngestFormat(s.path));
  }
  options.ingest.input = std::move(input);
  VIGIL_ASSIGN_OR_RETURN(ImportResult result, ctx.Catalog().Import(name, s.path, options));
  ResultSet r;
  r.message = Rows(result.rows, "copied") + " into " + name.ToString();
  if (result.created) {
    r.message += " (table created: " + result.schema->ToString() + ")";
  }
  ctx.Invalidate(name);
  return r;
}

Result<ResultSet> ExecDelete(ExecContext& ctx, const DeleteStatement& s) {
  VIGIL_ASSIGN_OR_RETURN(Target t, WritableTable(ctx, s.table));
  VIGIL_ASSIGN_OR_RETURN(auto snapshot, query::TableSnapshot::Open(t.dataset));
  Result<std::vector<RowAddress>> rows = MatchRows(*snapshot, s.where);
  if (!rows.ok()) return rows.status().WithContext("DELETE FROM " + t.name.ToString());
  TransactionProperties props;
  props.operation = "DELETE";
  VIGIL_RETURN_IF_ERROR(t.dataset->Delete(*rows, props).status());
  ctx.Invalidate(t.name);
  ResultSet r;
  r.message = Rows(rows->size(), "deleted");
  return r;
}

Result<ResultSet> ExecUpdate(ExecContext& ctx, const UpdateStatement& s) {
  VIGIL_ASSIGN_OR_RETURN(Target t, WritableTable(ctx, s.table));
  const std::string table = t.name.ToString();
  VIGIL_RETURN_IF_ERROR(CheckAssignments(*t.dataset->schema(), s, table));
  VIGIL_ASSIGN_OR_RETURN(auto snapshot, query::TableSnapshot::Open(t.dataset));
  Result<std::vector<RowAddress>> rows = MatchRows(*snapshot, s.where);
  if (!rows.ok()) return rows.status().WithContext("UPDATE " + table);
  ResultSet r;
  r.message = Rows(rows->size(), "updated");
  if (rows->empty()) return r;
  VIGIL_ASSIGN_OR_RETURN(RecordBatch old, query::TakeRows(*snapshot, *rows));
  Result<RecordBatch> updated = UpdatedBatch(old, s, table);
  if (!updated.ok()) return updated.status().WithContext("UPDATE " + table);
  VIGIL_RETURN_IF_ERROR(CommitUpdate(*t.dataset, *rows, std::move(*updated)).status());
  ctx.Invalidate(t.name);
  return r;
}

}  // namespace vigil::sql
