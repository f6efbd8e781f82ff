// Admission of index statements as durable jobs (seed 000 sections 2, 5, 7.3
// T1): CREATE [OR REPLACE] INDEX [IF NOT EXISTS] and DROP INDEX [IF EXISTS]
// are validated against the table's newest version (type/property matrix,
// administrator caps, mutual exclusions, case-insensitive name matching) and
// either admitted (job + fence + guard + event in one transaction) or refused
// before any job exists. A matching IF NOT EXISTS, or a DROP IF EXISTS of a
// missing name, is admitted and concluded at once as a durable NOOP. On an
// external Lance table the same rules are applied to the dataset's newest
// version as the Lance runner reads it (admission_lance.cc).
// Thread safety: an Admission is stateless over a thread-safe JobStore.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "vigil/common/config.h"
#include "vigil/common/status.h"
#include "vigil/index/index_spec.h"
#include "vigil/jobs/job_store.h"

namespace vigil::jobs {

struct IndexTarget {
  std::string catalog = "local";
  std::string database;
  std::string table;
};

struct CreateIndexStatement {
  IndexTarget target;
  std::string index_name;
  std::string column;
  index::IndexType type = index::IndexType::kBtree;
  std::map<std::string, std::string> properties;
  bool if_not_exists = false;
  bool or_replace = false;
};

// BUILD INDEX name ON t: a delta segment for the fragments the index does not cover.
struct BuildIndexStatement {
  IndexTarget target;
  std::string index_name;
};

struct DropIndexStatement {
  IndexTarget target;
  std::string index_name;
  bool if_exists = false;
};

class Admission {
 public:
  // `request`: the API request admitting jobs, confirmed and recorded with each (JobStore::Admit).
  // `lance`: how an external Lance table is read (its runner).
  Admission(JobStore* store, IndexCaps caps, RequestClaim request = {}, LanceConfig lance = {})
      : store_(store), caps_(caps), request_(std::move(request)), lance_(std::move(lance)) {}

  // Returns the admitted job. Errors before any job exists: InvalidArgument
  // (bad name/type/property/column, IF NOT EXISTS with OR REPLACE, an ambiguous
  // case-only name), NotFound (table), AlreadyExists (name exists, or its fence is
  // held, or IF NOT EXISTS finds the name with another definition, shown with the
  // requested one). A job records the caps it was admitted under (JobPropertiesJson).
  Result<JobRecord> Create(const CreateIndexStatement& stmt, const std::string& actor, int64_t now_ms);
  Result<JobRecord> Drop(const DropIndexStatement& stmt, const std::string& actor, int64_t now_ms);
  // NotFound when no index matches; admitted and concluded at once as a NOOP when
  // the index already covers every fragment of the newest version.
  Result<JobRecord> Build(const BuildIndexStatement& stmt, const std::string& actor, int64_t now_ms);

  // The job holding the same-name fence of `name` on the target's current
  // incarnation (what an AlreadyExists "fenced" names), or nullopt.
  Result<std::optional<JobRecord>> FenceHolder(const IndexTarget& target, const std::string& name);

 private:
  // The same statements on an external Lance table (admission_lance.cc).
  Result<JobRecord> CreateLance(const catalog::TableEntry& table, const CreateIndexStatement& stmt,
                                const std::string& actor, int64_t now_ms);
  Result<JobRecord> DropLance(const catalog::TableEntry& table, const DropIndexStatement& stmt,
                              const std::string& actor, int64_t now_ms);
  Result<JobRecord> BuildLance(const catalog::TableEntry& table, const BuildIndexStatement& stmt,
                               const std::string& actor, int64_t now_ms);
  // The registered table of `target` for a statement naming `index_name`: InvalidArgument
  // when the name is not an identifier, unless the table is an external Lance table (whose
  // names another writer chose: admission_lance.cc checks them); NotFound when there is none.
  Result<catalog::TableEntry> LookupNamed(const IndexTarget& target, const std::string& index_name);
  // The registered table of `target`; NotFound when there is none.
  Result<catalog::TableEntry> Lookup(const IndexTarget& target);

  JobStore* store_;
  IndexCaps caps_;
  RequestClaim request_;
  LanceConfig lance_;
};

// Refuses an index mutation (`statement`, e.g. "CREATE INDEX") before any job exists:
// FailedPrecondition when [mutation] enabled is false (naming `config_path`), or when
// [worker] require_cgroup demands a boundary this machine cannot give the worker.
Status CheckMutationAllowed(const Config& config, const std::string& config_path, std::string_view statement);

}  // namespace vigil::jobs
