#include "vigil/worker/worker_process.h"

#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <new>
#include <optional>
#include <vector>

#include "vigil/common/config.h"
#include "vigil/common/env.h"
#include "vigil/common/failpoint.h"
#include "vigil/index/provider.h"
#include "vigil/lance/lance_job.h"
#include "vigil/worker/sandbox.h"

namespace vigil::worker {

namespace {

Response Complete(const AttemptIdentity& attempt, bool invoked, const Status& st, std::string_view secret,
                  std::optional<int64_t> version = std::nullopt) {
  Response r;
  r.attempt = attempt;
  r.invoked = invoked;
  r.native_return = static_cast<int32_t>(st.code());
  r.code = st.code();
  r.message = st.ok() ? "" : SanitizeMessage(st.ToString(), secret);
  r.committed_version = version;
  return r;
}

// The failpoint worker.allocate: takes memory until an allocation fails.
Status AllocateUntilFailure() {
  std::vector<char*> blocks;
  constexpr size_t kBlock = 64 << 20;
  Status out = Status::Internal("allocation never failed");
  try {
    for (int i = 0; i < (1 << 16); ++i) {
      char* b = new char[kBlock];
      memset(b, 1, kBlock);
      blocks.push_back(b);
    }
  } catch (const std::bad_alloc&) {
    out = Status::ResourceExhausted("allocation failed after " + std::to_string(blocks.size() * 64) + " MiB");
  }
  for (char* b : blocks) delete[] b;
  return out;
}

// A failure after an allocation failed, for the operator: the limit and the setting behind it.
Status OutOfMemory(const Status& cause) {
  std::string limit = "no address-space limit (worker.memory_bytes applies as the cgroup's memory.max)";
  struct rlimit lim {};
  if (::getrlimit(RLIMIT_AS, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    limit =
        "its memory limit worker.memory_bytes = " + FormatSize(static_cast<uint64_t>(lim.rlim_cur)) + " (RLIMIT_AS)";
  }
  return Status::ResourceExhausted("the worker ran out of memory under " + limit +
                                   "; raise worker.memory_bytes in vigil.toml or index less data at once (" +
                                   cause.ToString() + ")");
}

// A secret held in memory only while needed; zeroized on destruction.
class SecretBuffer {
 public:
  ~SecretBuffer() { Wipe(); }
  void Wipe() {
    if (!bytes_.empty()) ::explicit_bzero(bytes_.data(), bytes_.size());
    bytes_.clear();
  }
  std::string_view view() const { return std::string_view(bytes_.data(), bytes_.size()); }
  // Reads `fd` to EOF; ResourceExhausted past kMaxSecretBytes.
  Status ReadAll(int fd) {
    bytes_.reserve(kMaxSecretBytes + 1);  // never reallocated, so no copy is left behind
    char buf[4096];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        ::explicit_bzero(buf, sizeof buf);
        return Status::FromErrno(errno, "read secret");
      }
      if (n == 0) break;
      if (bytes_.size() + static_cast<size_t>(n) > kMaxSecretBytes) {
        ::explicit_bzero(buf, sizeof buf);
        return Status::ResourceExhausted("the secret is too long");
      }
      bytes_.insert(bytes_.end(), buf, buf + n);
    }
    ::explicit_bzero(buf, sizeof buf);
    return Status::OK();
  }

 private:
  std::vector<char> bytes_;
};

// The runner's hold points the crash tests arm as worker failpoints: the runner stops there
// and the worker evaluates the failpoint (kill: the worker dies, and node with it).
constexpr std::string_view kLanceHoldPoints[] = {"lance.before_commit", "lance.after_commit"};

// A job of an external Lance table: the Lance runner, started by this worker under its limits
// (its cgroup, rlimits and sandbox), holding the attempt lock as long as it runs.
Response ExecuteLanceJob(const AttemptIdentity& attempt, const Request& request, std::string_view secret,
                         const std::function<void(std::string_view, uint64_t, uint64_t)>& progress, int lock_fd) {
  lance::LanceJobCall call;
  call.runner.node_path = request.lance_node;
  call.runner.script_path = request.lance_runner;
  call.runner.timeout = std::chrono::hours(24 * 30);  // the supervisor's deadline kills the worker first
  call.runner.keep_fd = lock_fd;
  std::string hold;
  for (std::string_view point : kLanceHoldPoints) {
    if (failpoint::Armed(point)) {
      hold = std::string(point);
      call.stop_at = hold.substr(hold.find('.') + 1);
    }
  }
  // The runner fails after LanceDB's commit with an untyped error naming the failpoint's code
  // in words ("commit conflict", "not found"), as LanceDB's own messages would.
  if (failpoint::Armed("lance.error_after_commit")) {
    if (Status fp = failpoint::Hit("lance.error_after_commit"); !fp.ok()) {
      std::string words(StatusCodeName(fp.code()));
      for (char& c : words) c = c == '_' ? ' ' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      call.fail_after_commit = "LanceError: " + words + " (failpoint lance.error_after_commit, after the commit)";
    }
  }
  call.progress = [&](std::string_view phase) {
    if (phase == "STOPPED_AT") {
      // Reported first, so a test sees the runner holding before it acts on the hold.
      if (progress) progress(phase, 0, 0);
      (void)failpoint::Hit(hold);
      return;
    }
    if (progress) progress(phase, 0, 0);
  };
  if (Status fp = failpoint::Hit("worker.before_invoke"); !fp.ok()) return Complete(attempt, false, fp, secret);
#ifdef VIGIL_FAILPOINTS
  if (Status fp = failpoint::Hit("worker.sandbox_probe"); !fp.ok()) {
    return Complete(attempt, false, Status(fp.code(), ProbeSandbox()), secret);
  }
#endif
  bool invoked = false;
  Result<lance::LanceJobResult> result = lance::RunLanceJob(request.job, call, &invoked);
  if (Status fp = failpoint::Hit("worker.after_provider"); !fp.ok()) return Complete(attempt, invoked, fp, secret);
  if (!result.ok()) return Complete(attempt, invoked, result.status(), secret);
  return Complete(attempt, true, Status::OK(), secret, result->committed_version);
}

}  // namespace

Result<CatalogAnswer> PipeVersionCatalog::Call(const CatalogCall& call) {
  MutexLock lock(&mu_);
  VIGIL_RETURN_IF_ERROR(WriteAll(out_, EncodeCatalogCall(call)).WithContext("version catalog call"));
  Result<Frame> frame = ReadFrame(in_, reader_);
  if (!frame.ok()) return Status::IOError("no answer to a version catalog call: " + frame.status().ToString());
  if (frame->type != MessageType::kCatalogAnswer) {
    return Status::IOError("the supervisor answered a version catalog call with another message");
  }
  Result<CatalogAnswer> answer = DecodeCatalogAnswer(frame->payload);
  if (!answer.ok()) return Status::IOError("a corrupt version catalog answer: " + answer.status().ToString());
  return answer;
}

Result<std::optional<CatalogVersion>> PipeVersionCatalog::Latest() {
  VIGIL_ASSIGN_OR_RETURN(CatalogAnswer answer, Call(CatalogCall{}));
  if (answer.code != StatusCode::kOk) return Status(answer.code, answer.message);
  if (!answer.latest_version) return std::optional<CatalogVersion>();
  return std::optional<CatalogVersion>(CatalogVersion{*answer.latest_version, answer.latest_manifest});
}

Status PipeVersionCatalog::Claim(const VersionClaim& claim) {
  CatalogCall call{true, claim.version, claim.manifest, claim.txn.operation, claim.txn.job_id, claim.txn.attempt_id};
  // Test hook for the supervisor's defence: a claim for another attempt.
  if (!failpoint::Hit("worker.claim_identity").ok()) call.attempt_id += "-other";
  VIGIL_ASSIGN_OR_RETURN(CatalogAnswer answer, Call(call));
  return answer.code == StatusCode::kOk ? Status::OK() : Status(answer.code, answer.message);
}

Response ExecuteJob(const AttemptIdentity& attempt, const index::JobRequest& job, std::string_view secret,
                    const std::function<void(std::string_view, uint64_t, uint64_t)>& progress,
                    const DatasetOptions& dataset) {
  Result<index::PreparedJob> prepared = index::PrepareJob(job, dataset);
  if (!prepared.ok()) return Complete(attempt, false, prepared.status(), secret);
  if (Status fp = failpoint::Hit("worker.before_invoke"); !fp.ok()) return Complete(attempt, false, fp, secret);
#ifdef VIGIL_FAILPOINTS
  if (Status fp = failpoint::Hit("worker.sandbox_probe"); !fp.ok()) {
    return Complete(attempt, false, Status(fp.code(), ProbeSandbox()), secret);
  }
#endif

  const bool invoked = true;  // set immediately before the provider call
  if (!failpoint::Hit("worker.abort").ok()) std::abort();
  if (Status fp = failpoint::Hit("worker.allocate"); !fp.ok()) {
    Status st = AllocateUntilFailure();
    return Complete(attempt, invoked, st.code() == StatusCode::kResourceExhausted ? OutOfMemory(st) : st, secret);
  }
  const uint64_t allocation_failures = index::AllocationFailures();
  Result<index::ProviderResult> result = Status::Internal("not run");
  try {
    result =
        index::InvokeJob(*prepared, attempt.attempt_id, progress ? index::ProgressFn(progress) : index::ProgressFn());
  } catch (const std::bad_alloc& e) {
    result = OutOfMemory(Status::ResourceExhausted(std::string("the provider threw ") + e.what()));
  } catch (const std::exception& e) {
    result = Status::Internal(std::string("the provider threw: ") + e.what());
  }
  if (!result.ok() && index::AllocationFailures() != allocation_failures) result = OutOfMemory(result.status());
  if (Status fp = failpoint::Hit("worker.after_provider"); !fp.ok()) return Complete(attempt, invoked, fp, secret);
  if (!result.ok()) return Complete(attempt, invoked, result.status(), secret);
  return Complete(attempt, invoked, Status::OK(), secret, static_cast<int64_t>(result->committed_version));
}

int ServeOneRequest(const WorkerFds& fds, Env* env) {
  FrameReader reader;
  auto hello = ReadFrame(fds.in, &reader);
  if (!hello.ok() || hello->type != MessageType::kHandshake) return kExitHandshake;
  auto theirs = DecodeHandshake(hello->payload);
  // Always answer with our own handshake, so the supervisor sees a mismatch as one.
  if (!WriteAll(fds.out, EncodeHandshake({kProtocolVersion, std::string(BuildId())})).ok()) return kExitHandshake;
  if (!theirs.ok() || theirs->protocol_version != kProtocolVersion || theirs->build_id != BuildId()) {
    return kExitHandshake;
  }

  auto frame = ReadFrame(fds.in, &reader);
  if (!frame.ok() || frame->type != MessageType::kRequest) return kExitProtocol;
  auto request = DecodeRequest(frame->payload);
  if (!request.ok()) return kExitProtocol;
  const AttemptIdentity& attempt = request->attempt;

  SecretBuffer secret;
  Response response;
  Status ready;
  if (request->secret_follows) {
    ready = secret.ReadAll(fds.secret);
    if (ready.ok() && secret.view().empty()) {
      ready = Status::InvalidArgument("the request announced a secret that did not arrive");
    }
  }
  if (fds.secret >= 0) ::close(fds.secret);
  if (ready.ok() && !request->failpoints.empty()) ready = failpoint::ArmFromSpec(request->failpoints);
  if (!ready.ok()) {
    response = Complete(attempt, false, ready, secret.view());
  } else {
    int64_t last = env->MonotonicMs();
    std::string last_phase;
    auto progress = [&](std::string_view phase, uint64_t done, uint64_t total) {
      const int64_t now = env->MonotonicMs();
      if (phase == last_phase && done != total && now - last < 100) return;
      last = now;
      last_phase = std::string(phase);
      (void)WriteAll(fds.out, EncodeProgress({std::string(phase), done, total}));
    };
    if (request->job.engine == index::TableEngine::kLance) {
      response = ExecuteLanceJob(attempt, *request, secret.view(), progress, fds.lock);
    } else if (fds.lance_sandbox) {
      response = Complete(attempt, false,
                          Status::InvalidArgument("a worker in the Lance runner's sandbox runs only Lance jobs"),
                          secret.view());
    } else {
      DatasetOptions dataset;
      if (request->version_catalog) {
        dataset.versions = std::make_shared<PipeVersionCatalog>(fds.in, fds.out, &reader);
      }
      response = ExecuteJob(attempt, request->job, secret.view(), progress, dataset);
    }
  }
  secret.Wipe();
  // Test hooks for the supervisor's defences: a response for another attempt, a corrupt frame.
  if (!failpoint::Hit("worker.response_identity").ok()) response.attempt.attempt_id += "-other";
  std::string bytes = EncodeResponse(response);
  if (!failpoint::Hit("worker.response_corrupt").ok()) bytes[kFrameHeaderBytes] ^= 0x5a;
  return WriteAll(fds.out, bytes).ok() ? 0 : kExitProtocol;
}

}  // namespace vigil::worker
