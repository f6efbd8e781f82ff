#include "vigil/lance/lance_job.h"

namespace vigil::lance {

namespace {

// The request's properties as the runner takes them (its allowlist checks each one).
Result<nlohmann::json> Properties(const std::string& properties_json) {
  nlohmann::json p = nlohmann::json::parse(properties_json, nullptr, false);
  if (p.is_discarded() || !p.is_object()) return Status::InvalidArgument("the job's properties are not a JSON object");
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : p.items()) {
    out[key] = value.is_string() ? value.get<std::string>() : value.dump();
  }
  return out;
}

}  // namespace

Result<nlohmann::json> LanceRequest(const index::JobRequest& job) {
  nlohmann::json r = {{"dataset", job.locator}, {"expected_version", job.start_version}, {"name", job.index_name}};
  switch (job.operation) {
    case index::JobOperation::kCreate:
    case index::JobOperation::kReplace: {
      if (job.columns.size() != 1) return Status::InvalidArgument("a Lance index has exactly one column");
      r["op"] = "create_index";
      r["replace"] = job.operation == index::JobOperation::kReplace;
      r["column"] = job.columns[0];
      r["index_type"] = job.physical_type;
      VIGIL_ASSIGN_OR_RETURN(r["properties"], Properties(job.properties_json));
      return r;
    }
    case index::JobOperation::kDrop:
      r["op"] = "drop_index";
      return r;
    case index::JobOperation::kBuild:
      r["op"] = "optimize_index";
      return r;
  }
  return Status::InvalidArgument("no Lance operation serves this job");
}

Result<LanceJobResult> RunLanceJob(const index::JobRequest& job, const LanceJobCall& call, bool* invoked) {
  *invoked = false;
  VIGIL_ASSIGN_OR_RETURN(nlohmann::json request, LanceRequest(job));
  if (!call.stop_at.empty()) request["stop_at"] = call.stop_at;
  if (!call.fail_after_commit.empty()) request["fail_after_commit"] = call.fail_after_commit;
  auto on_progress = [&](const nlohmann::json& line) {
    const std::string phase = line.value("phase", "");
    if (phase != "OPENING" && phase != "STOPPED_AT" && !phase.empty()) *invoked = true;
    if (call.progress) call.progress(phase);
  };
  VIGIL_ASSIGN_OR_RETURN(nlohmann::json result, RunLance(request, call.runner, on_progress));
  const int64_t version = result.value("version", int64_t{0});
  if (version < 1) return Status::Internal("the Lance runner reported no committed version");
  *invoked = true;
  return LanceJobResult{version};
}

}  // namespace vigil::lance
