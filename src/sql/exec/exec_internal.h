// Internals of the statement executor (session.cc and exec_*.cc): the
// per-session context and one function per statement family. Every function
// either applies its statement completely or returns a typed error having
// changed nothing. Used by one thread at a time (like the Session).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vigil/auth/principal_store.h"
#include "vigil/catalog/table_catalog.h"
#include "vigil/common/config.h"
#include "vigil/common/status.h"
#include "vigil/jobs/job_control.h"
#include "vigil/jobs/job_store.h"
#include "vigil/query/query.h"
#include "vigil/sql/ast.h"
#include "vigil/sql/result.h"
#include "vigil/sql/select_engine.h"
#include "vigil/sql/session.h"
#include "vigil/storage/root.h"

namespace vigil::sql {

// What every statement needs: the root, its job store and settings.
struct ExecContext {
  Root root;
  std::unique_ptr<jobs::JobStore> store;
  Config config;
  SessionOptions options;
  std::unique_ptr<SelectEngine> select;              // opened by the first SELECT / EXPLAIN
  std::unique_ptr<auth::PrincipalStore> principals;  // opened by the first user or grant statement
  // The API request running the statement (no token for none): confirmed and recorded with
  // the jobs it admits.
  jobs::RequestClaim request;

  int64_t Now() const;
  jobs::JobControl Control() { return jobs::JobControl(store.get(), options.clock); }
  catalog::TableCatalog Catalog() const {
    return catalog::TableCatalog(&root, &store->catalog(), [this] { return Now(); });
  }
  // Tells an open select engine that a table's files changed.
  void Invalidate(const vigil::TableName& name);
};

// `[catalog.]db.table` of the AST as a storage name; InvalidArgument when no database is written.
Result<vigil::TableName> ResolveTable(const ExecContext& ctx, const TableRef& name);
// NotFound (as for a missing table) unless the principal may see it; PermissionDenied
// when it may see but not hold `p`.
Status Authorize(const ExecContext& ctx, const vigil::TableName& name, auth::Privilege p);
// The newest version of an existing table (through the catalog); NotFound "table c.db.t does not exist".
Result<std::shared_ptr<Dataset>> OpenTable(const ExecContext& ctx, const vigil::TableName& name);
// "YYYY-MM-DD HH:MM:SS" (UTC) of Unix milliseconds.
std::string FormatTimeMs(int64_t ms);

// ---- Literal coercion and expression evaluation (exec_eval.cc) ----

// A literal as a value of `type` (typed literals, numbers, strings parsed with
// ParseTextValue, '[...]' vectors with their dimension checked). NULL gives NULL.
// InvalidArgument without location (callers add it).
Result<vigil::Value> CoerceLiteral(const Literal& literal, const DataType& type);

// The rows of a table version to read an expression against.
class RowSource {
 public:
  virtual ~RowSource() = default;
  // The value of `column` in the current row and its type; InvalidArgument for an unknown name.
  virtual Result<std::pair<vigil::Value, DataType>> Column(const std::string& column) const = 0;
};

// One row of a RecordBatch (set_row picks it) as a RowSource.
class BatchRow : public RowSource {
 public:
  BatchRow(const RecordBatch& batch, std::string table) : batch_(batch), table_(std::move(table)) {}
  void set_row(size_t row) { row_ = row; }
  Result<std::pair<vigil::Value, DataType>> Column(const std::string& column) const override {
    std::optional<size_t> i = batch_.schema->IndexOf(column);
    if (!i) return Status::InvalidArgument("table " + table_ + " has no column '" + column + "'");
    return std::make_pair(batch_.columns[*i].ValueAt(row_), batch_.schema->field(*i).type);
  }

 private:
  const RecordBatch& batch_;
  std::string table_;
  size_t row_ = 0;
};

// Evaluates a condition with SQL's three-valued logic: true, false or nullopt (unknown).
Result<std::optional<bool>> EvalCondition(const Expr& expr, const RowSource& row);
// Evaluates `expr` and converts the result to a value of `type` (for UPDATE ... SET).
Result<vigil::Value> EvalForColumn(const Expr& expr, const RowSource& row, const DataType& type);
// The conjunct as a pushable column predicate (column op literal, IN, BETWEEN, IS NULL)
// when it has exactly the semantics of row-by-row evaluation; nullopt otherwise.
std::optional<query::ColumnPredicate> ToColumnPredicate(const Expr& conjunct, const Schema& schema);
// The live rows of `snapshot` where `where` is true (every row when empty): conjuncts that
// ToColumnPredicate accepts go to FilterRows, the rest is evaluated over a scan.
Result<std::vector<RowAddress>> MatchRows(const query::TableSnapshot& snapshot, const std::optional<Expr>& where);

// ---- Statement families ----
Result<ResultSet> ExecCreateDatabase(ExecContext& ctx, const CreateDatabaseStatement& s);
Result<ResultSet> ExecDropDatabase(ExecContext& ctx, const DropDatabaseStatement& s);
Result<ResultSet> ExecShowDatabases(ExecContext& ctx, const ShowDatabasesStatement& s);
Result<ResultSet> ExecShowTables(ExecContext& ctx, const ShowTablesStatement& s);
Result<ResultSet> ExecCreateTable(ExecContext& ctx, const CreateTableStatement& s);
Result<ResultSet> ExecDropTable(ExecContext& ctx, const DropTableStatement& s);
Result<ResultSet> ExecRefreshTable(ExecContext& ctx, const RefreshTableStatement& s);

Result<ResultSet> ExecInsert(ExecContext& ctx, const InsertStatement& s);
Result<ResultSet> ExecCopy(ExecContext& ctx, const CopyStatement& s);
// COPY of an input the caller opened (a server's spooled request body): no file access rule.
// The token of `request` goes into the commit's transaction properties; its confirm runs just
// before the commit. A missing table is created from the input when `create_missing`, else
// NotFound.
Result<ResultSet> ExecCopyInput(ExecContext& ctx, const CopyStatement& s, std::shared_ptr<const RandomAccessFile> input,
                                const jobs::RequestClaim& request = {}, bool create_missing = true);
// Session::Append and Session::OpenTableVersion.
Result<ResultSet> ExecAppend(ExecContext& ctx, const TableRef& table, const Session::RowsFactory& make_rows);
Result<std::shared_ptr<Dataset>> ExecOpenTableVersion(ExecContext& ctx, const TableRef& table,
                                                      std::optional<uint64_t> version);
Result<ResultSet> ExecDelete(ExecContext& ctx, const DeleteStatement& s);
Result<ResultSet> ExecUpdate(ExecContext& ctx, const UpdateStatement& s);

Result<ResultSet> ExecCreateIndex(ExecContext& ctx, const CreateIndexStatement& s);
Result<ResultSet> ExecDropIndex(ExecContext& ctx, const DropIndexStatement& s);
Result<ResultSet> ExecShowIndex(ExecContext& ctx, const ShowIndexStatement& s);
// BUILD INDEX: a job that adds one delta segment for the fragments the index does not cover.
Result<ResultSet> ExecBuildIndex(ExecContext& ctx, const BuildIndexStatement& s);
// VACUUM (exec_vacuum.cc): removes what no retained version, active or unknown job, lease
// or pin needs; orphans only when no executor of the table can still write.
Result<ResultSet> ExecVacuum(ExecContext& ctx, const VacuumStatement& s);

// SHOW VERSIONS and SHOW GENERATIONS (exec_versions.cc): need table SHOW.
// The table's committed versions (SHOW on it), oldest first; `corrupt` gets those that do not verify.
Result<std::vector<VersionInfo>> ExecTableHistory(ExecContext& ctx, const TableRef& table,
                                                  std::vector<uint64_t>* corrupt);
Result<ResultSet> ExecShowVersions(ExecContext& ctx, const ShowVersionsStatement& s);
Result<ResultSet> ExecShowGenerations(ExecContext& ctx, const ShowGenerationsStatement& s);

Result<ResultSet> ExecShowIndexJobs(ExecContext& ctx, const ShowIndexJobsStatement& s);
Result<ResultSet> ExecShowIndexJob(ExecContext& ctx, const ShowIndexJobStatement& s);
Result<ResultSet> ExecCancelIndexJob(ExecContext& ctx, const CancelIndexJobStatement& s);
Result<ResultSet> ExecResolveIndexJob(ExecContext& ctx, const ResolveIndexJobStatement& s);
Result<ResultSet> ExecWaitIndexJob(ExecContext& ctx, const WaitIndexJobStatement& s);
// The job as SHOW INDEX JOB reads it, and RESOLVE INDEX JOB's resolution (Session::ShowJob,
// Session::ResolveJob): the statements' own visibility and privilege rules.
Result<jobs::JobDetail> ExecShowJob(ExecContext& ctx, int64_t job_id);
Result<jobs::JobDetail> ExecResolveJob(ExecContext& ctx, int64_t job_id, jobs::ResolveAction action,
                                       std::string_view comment);

// Users, tokens and grants (exec_users.cc): realm "default" of the root's principal store.
// Each requires global ADMIN (SHOW GRANTS FOR the caller itself excepted).
Result<ResultSet> ExecCreateUser(ExecContext& ctx, const CreateUserStatement& s);
Result<ResultSet> ExecDropUser(ExecContext& ctx, const DropUserStatement& s);
Result<ResultSet> ExecAlterUser(ExecContext& ctx, const AlterUserStatement& s);
Result<ResultSet> ExecGrant(ExecContext& ctx, const GrantStatement& s);
Result<ResultSet> ExecShowUsers(ExecContext& ctx, const ShowUsersStatement& s);
// PermissionDenied naming `what` and ADMIN unless the principal holds global ADMIN (the flag
// or an ADMIN grant on everything). In exec_users.cc.
Status RequireGlobalAdmin(const ExecContext& ctx, std::string_view what);
// ---- Nodes (exec_nodes.cc) ----
Result<ResultSet> ExecShowNodes(ExecContext& ctx, const ShowNodesStatement& s);
Result<ResultSet> ExecDrainNode(ExecContext& ctx, const DrainNodeStatement& s);
Result<ResultSet> ExecShowGrants(ExecContext& ctx, const ShowGrantsStatement& s);

}  // namespace vigil::sql
