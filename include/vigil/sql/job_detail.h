// One index job as SHOW INDEX JOB shows it, as typed values rather than rows: the
// items (the 20 list columns, then Columns, IndexType, ... RefreshError, by name)
// and each event's text. SHOW INDEX JOB prints these; the HTTP API's job JSON and
// the Python package read them through Session::ShowJob, so every surface shows
// the same job cell for cell. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "vigil/jobs/job_control.h"
#include "vigil/sql/result.h"

namespace vigil::sql {

struct JobItem {
  std::string name;  // "JobId", "State", ..., "RefreshError"
  Value value;
};

// SHOW INDEX JOB's items for `detail`, in its order, without its events and warnings.
std::vector<JobItem> JobDetailItems(const jobs::JobDetail& detail);
// One event as SHOW INDEX JOB's `Event <seq>` item prints it: "<time> KIND by actor ...".
std::string JobEventText(const jobs::JobEvent& event);

}  // namespace vigil::sql
