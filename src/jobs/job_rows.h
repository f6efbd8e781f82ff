// Mapping between job-store records and SQL rows/parameters (the column
// orders of job_schema.h). Pure functions; thread-safe.
#pragma once

#include <map>
#include <string>

#include "vigil/jobs/job_record.h"
#include "vigil/jobs/job_store.h"
#include "vigil/meta/database.h"

namespace vigil::jobs {

// A job row in sql::kJobColumns order; Corruption for unknown enum text or malformed JSON.
Result<JobRecord> ParseJob(const meta::Row& row);
// Parameters $1..$26 of sql::kInsertJob for a freshly admitted record.
meta::Params AdmissionParams(const JobRecord& rec);
// Parameters $1..$35 of sql::kUpdateJob: write `rec` (whose revision is already the new one)
// where the row still has `expected_revision`.
meta::Params MutableParams(const JobRecord& rec, int64_t expected_revision);

// An event row in sql::kSelectEvents order.
Result<JobEvent> ParseEvent(const meta::Row& row);
// Parameters $1..$9 of sql::kInsertEvent.
meta::Params EventParams(const JobEvent& ev);

// An audit row in sql::kSelectAudit order; Corruption for malformed warnings JSON.
Result<AuditRecord> ParseAudit(const meta::Row& row);
// Parameters $1..$12 of sql::kInsertAudit (audit_id is assigned by the database).
meta::Params AuditParams(const AuditRecord& rec);

// The JSON object of `fields` (string values).
std::string DetailJson(const std::map<std::string, std::string>& fields);

}  // namespace vigil::jobs
