// One admitted index job as its provider call sees it: the operation and the
// admitted spec fields (target, name, columns, type, properties, version,
// schema fingerprint, caps). The job layer builds it from a job record, the
// worker protocol carries it, and provider.h maps it to exactly one provider
// call (PrepareJob, InvokeJob). Plain values; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "vigil/common/index_caps.h"
#include "vigil/common/status.h"

namespace vigil::index {

// The values are part of the worker protocol's encoding.
enum class JobOperation : uint8_t { kCreate = 1, kReplace = 2, kDrop = 3, kBuild = 4 };
// Who owns a table's dataset: Vigil (its own format and provider) or LanceDB (an external
// Lance table, served by the Lance runner; DESIGN.md section 13). Part of the encoding too.
enum class TableEngine : uint8_t { kVigil = 1, kLance = 2 };
std::string_view TableEngineName(TableEngine e);  // VIGIL | LANCE
// InvalidArgument for another name.
Result<TableEngine> ParseTableEngine(std::string_view name);

struct JobRequest {
  int64_t job_id = 0;
  JobOperation operation = JobOperation::kCreate;
  TableEngine engine = TableEngine::kVigil;
  std::string locator;  // dataset path
  std::string index_name;
  std::vector<std::string> columns;
  std::string physical_type;  // IVF_PQ | BTREE | BITMAP | FTS; empty for DROP
  std::string properties_json = "{}";
  int64_t start_version = 0;
  std::string schema_fingerprint;
  // The caps CREATE / REPLACE was admitted under; revalidated before invocation.
  IndexCaps caps;

  bool operator==(const JobRequest&) const = default;
};

}  // namespace vigil::index
