// What the admission of Vigil's own tables (admission.cc) and of external Lance
// tables (admission_lance.cc) share. Pure functions over a thread-safe store.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "vigil/jobs/admission.h"

namespace vigil::jobs::internal {

SqlCategory CategoryOf(index::IndexType t);

// The position of the one name in `names` matching `name` case-insensitively (v1), or
// nullopt. Two matches (an external case-only collision) are InvalidArgument.
Result<std::optional<size_t>> MatchName(const std::vector<std::string>& names, const std::string& name);

// A CREATE of `requested` on `table` where `existing` (null: none) already matches it by
// case: InvalidArgument when it differs by case only, AlreadyExists when it is the same name;
// OK without a match, or with IF NOT EXISTS or OR REPLACE.
Status CheckNewName(const std::string& requested, const std::string* existing, bool if_not_exists, bool or_replace,
                    const std::string& table);

// Admits `spec` and, for a pre-dispatch NOOP, concludes it at once.
Result<JobRecord> AdmitSpec(JobStore* store, const JobSpec& spec, const std::string& actor, int64_t now_ms, bool noop,
                            const RequestClaim& request);

// A spec of `op` on index `exact_name` of table `t` (target, incarnations, locator, engine).
JobSpec TableSpec(const catalog::TableEntry& t, const std::string& exact_name, Operation op);

}  // namespace vigil::jobs::internal
