#include "vigil/idempotency/record.h"
#include "vigil/common/ascii.h"

#include <nlohmann/json.hpp>

#include <array>

namespace vigil::idempotency {

namespace {

constexpr std::array<std::string_view, 6> kAllowedHeaders = {"content-type", "etag",         "last-modified",
                                                             "location",     "vigil-job-id", "vigil-table-version"};

bool Printable(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

Status CheckText(std::string_view field, std::string_view value, size_t max_bytes) {
  if (value.empty()) return Status::InvalidArgument(std::string(field) + " is empty");
  if (value.size() > max_bytes) {
    return Status::InvalidArgument(std::string(field) + " is " + std::to_string(value.size()) + " bytes, more than " +
                                   std::to_string(max_bytes));
  }
  if (!Printable(value)) {
    return Status::InvalidArgument(std::string(field) + " has a byte outside printable ASCII");
  }
  return Status::OK();
}

}  // namespace

bool IsAllowedResponseHeader(std::string_view name) {
  for (std::string_view h : kAllowedHeaders) {
    if (h == name) return true;
  }
  return false;
}

Status ValidateKey(std::string_view realm_id, std::string_view idempotency_key) {
  VIGIL_RETURN_IF_ERROR(CheckText("realm_id", realm_id, kMaxRealmBytes));
  return CheckText("idempotency_key", idempotency_key, kMaxKeyBytes);
}

Status ValidateReserve(const ReserveRequest& req) {
  VIGIL_RETURN_IF_ERROR(ValidateKey(req.realm_id, req.idempotency_key));
  VIGIL_RETURN_IF_ERROR(CheckText("operation_type", req.operation_type, kMaxOperationTypeBytes));
  VIGIL_RETURN_IF_ERROR(CheckText("resource_id", req.resource_id, kMaxResourceIdBytes));
  VIGIL_RETURN_IF_ERROR(CheckText("request_fingerprint", req.request_fingerprint, kMaxFingerprintBytes));
  VIGIL_RETURN_IF_ERROR(CheckText("executor_id", req.executor_id, kMaxExecutorIdBytes));
  if (req.ttl_ms <= 0) return Status::InvalidArgument("ttl_ms must be positive");
  return Status::OK();
}

Status ValidateFinalize(FinalizeRequest* req) {
  VIGIL_RETURN_IF_ERROR(ValidateKey(req->realm_id, req->idempotency_key));
  VIGIL_RETURN_IF_ERROR(CheckText("executor_id", req->executor_id, kMaxExecutorIdBytes));
  if (req->http_status < 100 || req->http_status > 599) {
    return Status::InvalidArgument("http_status " + std::to_string(req->http_status) + " outside 100-599");
  }
  if (req->error_subtype) {
    VIGIL_RETURN_IF_ERROR(CheckText("error_subtype", *req->error_subtype, kMaxErrorSubtypeBytes));
  }
  if (req->response_summary) {
    const std::string& s = *req->response_summary;
    if (s.size() > kMaxResponseSummaryBytes) {
      return Status::InvalidArgument("response_summary is " + std::to_string(s.size()) + " bytes, more than " +
                                     std::to_string(kMaxResponseSummaryBytes));
    }
    if (!nlohmann::json::accept(s)) {
      return Status::InvalidArgument("response_summary is not valid JSON");
    }
  }
  std::map<std::string, std::string> lowered;
  for (const auto& [name, value] : req->response_headers) {
    const std::string lower = AsciiLowered(name);
    if (!IsAllowedResponseHeader(lower)) {
      return Status::InvalidArgument("response header '" + name.substr(0, 64) + "' is not on the replay allowlist");
    }
    if (value.size() > kMaxHeaderValueBytes || !Printable(value)) {
      return Status::InvalidArgument("response header '" + lower + "' value is too long or has a control byte");
    }
    if (!lowered.emplace(lower, value).second) {
      return Status::InvalidArgument("response header '" + lower + "' given twice");
    }
  }
  req->response_headers = std::move(lowered);
  return Status::OK();
}

std::string EncodeHeaders(const std::map<std::string, std::string>& headers) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : headers) j[k] = v;
  return j.dump();
}

Result<std::map<std::string, std::string>> DecodeHeaders(std::string_view json) {
  auto j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Corruption("response_headers is not a JSON object");
  }
  std::map<std::string, std::string> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_string()) return Status::Corruption("response header value is not a string");
    out[it.key()] = it.value().get<std::string>();
  }
  return out;
}

}  // namespace vigil::idempotency
