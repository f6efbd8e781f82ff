#include "vigil/common/status.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace vigil {

namespace {
struct CodeName {
  StatusCode code;
  std::string_view name;
};
constexpr CodeName kCodeNames[] = {
    {StatusCode::kOk, "OK"},
    {StatusCode::kInvalidArgument, "INVALID_ARGUMENT"},
    {StatusCode::kNotFound, "NOT_FOUND"},
    {StatusCode::kAlreadyExists, "ALREADY_EXISTS"},
    {StatusCode::kNotSupported, "NOT_SUPPORTED"},
    {StatusCode::kCommitConflict, "COMMIT_CONFLICT"},
    {StatusCode::kCorruption, "CORRUPTION"},
    {StatusCode::kIOError, "IO_ERROR"},
    {StatusCode::kResourceExhausted, "RESOURCE_EXHAUSTED"},
    {StatusCode::kInternal, "INTERNAL"},
    {StatusCode::kFailedPrecondition, "FAILED_PRECONDITION"},
    {StatusCode::kPermissionDenied, "PERMISSION_DENIED"},
    {StatusCode::kDeadlineExceeded, "DEADLINE_EXCEEDED"},
    {StatusCode::kCancelled, "CANCELLED"},
    {StatusCode::kBusy, "BUSY"},
    {StatusCode::kStaleIncarnation, "STALE_INCARNATION"},
};
}  // namespace

std::string_view SubCodeOf(std::string_view message) {
  const size_t colon = message.find(": ");
  if (colon == std::string_view::npos || colon == 0 || colon > 64) return {};
  for (char c : message.substr(0, colon)) {
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return {};
  }
  return message.substr(0, colon);
}

std::string_view StatusCodeName(StatusCode code) {
  for (const auto& cn : kCodeNames) {
    if (cn.code == code) return cn.name;
  }
  return "UNKNOWN_CODE";
}

std::optional<StatusCode> StatusCodeFromName(std::string_view name) {
  for (const auto& cn : kCodeNames) {
    if (cn.name == name) return cn.code;
  }
  return std::nullopt;
}

Status Status::FromErrno(int err, std::string_view context) {
  std::string msg = std::string(context) + ": " + std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) return ResourceExhausted(std::move(msg));
  if (err == ENOENT) return NotFound(std::move(msg));
  return IOError(std::move(msg));
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(StatusCodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_);
}

namespace internal {
void CheckFailed(const char* cond, const char* file, int line) {
  std::fprintf(stderr, "vigil: invariant violated: %s at %s:%d\n", cond, file, line);
  std::fflush(stderr);
  std::abort();
}
}  // namespace internal

}  // namespace vigil
