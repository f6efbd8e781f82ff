// Status and Result<T>: the error model of every fallible path in Vigil.
//
// A Status carries one code from a small fixed set plus a message that names
// what was wrong and where. Result<T> holds either a value or a non-OK Status.
// Both are values: immutable after construction, safe to copy across threads.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace vigil {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,
  kNotFound = 2,
  kAlreadyExists = 3,
  kNotSupported = 4,
  kCommitConflict = 5,
  kCorruption = 6,
  kIOError = 7,
  kResourceExhausted = 8,
  kInternal = 9,
  kFailedPrecondition = 10,  // state does not allow the request (e.g. not cancellable)
  kPermissionDenied = 11,
  kDeadlineExceeded = 12,
  kCancelled = 13,
  kBusy = 14,  // a bounded resource is taken; the caller may retry later
  // A writer's table incarnation is no longer the one at its location (dropped, or the
  // name re-created): it must not publish there, and retrying cannot help.
  kStaleIncarnation = 15,
};
constexpr StatusCode kLastStatusCode = StatusCode::kStaleIncarnation;

// Stable upper-case name of a code ("INVALID_ARGUMENT"); used in protocols and SQL errors.
std::string_view StatusCodeName(StatusCode code);
// The typed sub-code leading a message ("INDEX_FENCED: index 'i' ..." gives INDEX_FENCED): 1-64
// characters of A-Z, 0-9 and _ before ": "; empty when the message has none.
std::string_view SubCodeOf(std::string_view message);
// Parses a name produced by StatusCodeName; nullopt when unknown.
std::optional<StatusCode> StatusCodeFromName(std::string_view name);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }
  static Status NotSupported(std::string m) { return {StatusCode::kNotSupported, std::move(m)}; }
  static Status CommitConflict(std::string m) { return {StatusCode::kCommitConflict, std::move(m)}; }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status IOError(std::string m) { return {StatusCode::kIOError, std::move(m)}; }
  static Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
  static Status PermissionDenied(std::string m) { return {StatusCode::kPermissionDenied, std::move(m)}; }
  static Status DeadlineExceeded(std::string m) { return {StatusCode::kDeadlineExceeded, std::move(m)}; }
  static Status Cancelled(std::string m) { return {StatusCode::kCancelled, std::move(m)}; }
  static Status Busy(std::string m) { return {StatusCode::kBusy, std::move(m)}; }
  static Status StaleIncarnation(std::string m) { return {StatusCode::kStaleIncarnation, std::move(m)}; }
  // IOError (ResourceExhausted for ENOSPC/EDQUOT, NotFound for ENOENT) from an errno value,
  // naming the operation.
  static Status FromErrno(int err, std::string_view context);

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  bool Is(StatusCode c) const { return code_ == c; }

  // "CODE: message", or "OK".
  std::string ToString() const;
  // Same code, message prefixed with `context: `.
  Status WithContext(std::string_view context) const;

  bool operator==(const Status& o) const { return code_ == o.code_ && message_ == o.message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Holds a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result constructed from OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  T& value() & {
    assert(ok());
    return std::get<T>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace vigil

#define VIGIL_CONCAT_INNER_(a, b) a##b
#define VIGIL_CONCAT_(a, b) VIGIL_CONCAT_INNER_(a, b)

// Returns the Status from the enclosing function when `expr` is not OK.
#define VIGIL_RETURN_IF_ERROR(expr)        \
  do {                                     \
    ::vigil::Status _vigil_st = (expr);    \
    if (!_vigil_st.ok()) return _vigil_st; \
  } while (0)

// Evaluates a Result<T> expression; on error returns its Status, else moves the value into `lhs`.
#define VIGIL_ASSIGN_OR_RETURN(lhs, expr) VIGIL_ASSIGN_OR_RETURN_IMPL_(VIGIL_CONCAT_(_vigil_res_, __LINE__), lhs, expr)
#define VIGIL_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

// Invariant check that stays on in every build type.
#define VIGIL_CHECK(cond)                                                   \
  do {                                                                      \
    if (!(cond)) ::vigil::internal::CheckFailed(#cond, __FILE__, __LINE__); \
  } while (0)

namespace vigil::internal {
[[noreturn]] void CheckFailed(const char* cond, const char* file, int line);
}
