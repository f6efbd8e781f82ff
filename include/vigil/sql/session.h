// A SQL session on an embedded root: parses and executes Vigil's statements
// (DDL, DML, index jobs, SHOW, job control, users and grants) and hands
// SELECT / EXPLAIN to the SelectEngine. Statements that admit index jobs
// return the job ids; a statement never half-applies. The embedded shell runs
// as the local administrator with client-side file access; other principals
// are checked by the job layer's rules (users and grants need global ADMIN).
// Thread safety: one thread at a time per session.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/auth/principal.h"
#include "vigil/common/status.h"
#include "vigil/jobs/job_control.h"
#include "vigil/jobs/request_claim.h"
#include "vigil/sql/ast.h"
#include "vigil/sql/result.h"
#include "vigil/sql/select_engine.h"
#include "vigil/storage/column.h"
#include "vigil/storage/dataset.h"
#include "vigil/storage/schema.h"

namespace vigil::sql {

// On whose behalf a statement reads a file it names (COPY ... FROM 'path').
enum class FileAccess {
  // A server's, for `principal`: only ADMIN, only below [sql] copy_allowed_directories.
  kServer,
  // The process's own user loading their own files (`vigil sql`, `vigil demo`; psql's \copy).
  kClient,
};

struct SessionOptions {
  auth::Principal principal = auth::Principal::LocalAdmin();
  // Either way only regular files are read. A caller serving other users keeps kServer.
  FileAccess file_access = FileAccess::kServer;
  // Called after a statement admitted index jobs (the shell starts `vigil supervise`
  // through it); may be empty (tests run a leader themselves).
  std::function<Status()> ensure_leader;
  // Unix milliseconds; tests inject a clock. Empty: Env::Default()'s clock.
  std::function<int64_t()> clock;
  // How long RESOLVE INDEX JOB waits for the leader's refresh (0: does not wait).
  int64_t resolve_wait_ms = 30'000;
  // WAIT INDEX JOB without TIMEOUT waits at most this long.
  int64_t default_wait_ms = int64_t{24} * 3600 * 1000;
  // vigil.toml's [sql] statement_timeout is a ceiling the session's SET may lower but never
  // lift (or turn off): a server's users share its sessions.
  bool statement_timeout_is_ceiling = false;
  // The process's generations (GenerationPool: one manager per table and one budget), shared
  // by every session given the same pool, so N sessions never hold N times the bounds of
  // [generations]; null: the session's engine has a pool of its own.
  std::shared_ptr<GenerationPool> generation_pool;
};

class Session {
 public:
  virtual ~Session() = default;
  // Opens the root (its job store, vigil.toml and select engine).
  static Result<std::unique_ptr<Session>> Open(const std::string& root_dir, SessionOptions options = {});

  // Parses and executes one statement.
  virtual Result<ResultSet> Execute(std::string_view sql) = 0;
  // The same for the API request `request`: an index job the statement admits is confirmed
  // and recorded with it in the admission's transaction (JobStore::Admit).
  virtual Result<ResultSet> Execute(std::string_view sql, const jobs::RequestClaim& request) = 0;
  // Executes an already parsed (or built) statement.
  virtual Result<ResultSet> Execute(const Statement& statement) = 0;
  // The same for the API request `request` (as Execute(sql, request)).
  virtual Result<ResultSet> Execute(const Statement& statement, const jobs::RequestClaim& request) = 0;
  // The typed job of SHOW INDEX JOB `job_id`, under its rules: NotFound, exactly as for a
  // missing job, when the principal may not see it.
  virtual Result<jobs::JobDetail> ShowJob(int64_t job_id) = 0;
  // RESOLVE INDEX JOB `job_id` AS `action` COMMENT `comment`, under its rules (ALTER on the
  // job's table; WITHOUT REFRESH needs ADMIN); waits for the leader as the statement does.
  virtual Result<jobs::JobDetail> ResolveJob(int64_t job_id, jobs::ResolveAction action, std::string_view comment) = 0;
  // The committed versions of `table`, oldest first, as SHOW VERSIONS lists them (SHOW on
  // it); `corrupt` receives the versions whose manifest does not verify.
  virtual Result<std::vector<VersionInfo>> TableHistory(const TableRef& table, std::vector<uint64_t>* corrupt) = 0;
  // Runs the SELECT `sql` with `params` bound to its parameters, one value each
  // (InvalidArgument for another statement or another number of values).
  virtual Result<ResultSet> Select(std::string_view sql, const std::vector<Value>& params) = 0;
  // The schema a SELECT on `table` reads now (SHOW on it; NotFound when the session may
  // not see it, as for a missing table), from the same table handles SELECT keeps.
  virtual Result<SchemaPtr> SelectSchema(const TableRef& table) = 0;
  // COPY into the existing `table` (NotFound when missing: an upload never creates one) from
  // a request body the caller saved to `spooled_file` (its own file, named "upload" in
  // messages): ALTER on the table is checked as for COPY, the session's file access rule is
  // not (the file is not the principal's choice). The token of
  // `request` is recorded in the commit's transaction properties, so that the table's history
  // shows whether the request took effect; its confirm runs just before the commit.
  virtual Result<ResultSet> CopyUpload(const TableRef& table, const std::string& spooled_file, CopyFormat format,
                                       const jobs::RequestClaim& request) = 0;
  // Version `version` of `table` to read (SHOW on it), the newest when nullopt; NotFound
  // names a version the table does not have.
  virtual Result<std::shared_ptr<Dataset>> OpenTableVersion(const TableRef& table, std::optional<uint64_t> version) = 0;
  // Appends the rows of the reader `make_rows` returns for the table's newest schema as one
  // commit (ALTER on the table, as INSERT). A batch the reader or the table refuses commits
  // nothing; the message counts the rows ("3 rows inserted").
  using RowsFactory = std::function<Result<std::unique_ptr<RecordBatchReader>>(const SchemaPtr& schema)>;
  virtual Result<ResultSet> Append(const TableRef& table, const RowsFactory& make_rows) = 0;
  // Binds the session to `principal` and restores per-session settings (SET) to vigil.toml's:
  // a server reuses one session for many users' requests, each starting this way.
  virtual void Reset(auth::Principal principal) = 0;
};

}  // namespace vigil::sql
