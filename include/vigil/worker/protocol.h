// The supervisor <-> vigil-worker protocol (DESIGN.md section 6): length-bounded,
// XXH3-checksummed frames over pipes carrying a handshake (both ways), one
// request, progress messages, calls on the dataset's version catalog (each
// answered by the supervisor, which holds the metadata store) and one final
// response. Secrets never travel in
// a frame; the request only says whether one follows on the separate secret
// pipe. Plain values and pure functions; thread-safe. FrameReader is owned by
// one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "vigil/common/status.h"
#include "vigil/index/provider_job.h"
#include "vigil/worker/attempt_identity.h"

namespace vigil::worker {

constexpr uint32_t kProtocolVersion = 4;  // 3: version catalog calls; 4: the table engine, the Lance runner
// "VGWK" little-endian: the first four bytes of every frame.
constexpr uint32_t kFrameMagic = 0x4b574756;
constexpr size_t kFrameHeaderBytes = 12;  // magic u32, type u16, flags u16, length u32
constexpr size_t kFrameTrailerBytes = 8;  // XXH3-64 of header and payload
constexpr size_t kMaxFramePayload = 1 << 20;
constexpr size_t kMaxMessageBytes = 1024;  // the response message, after sanitizing
constexpr size_t kMaxSecretBytes = 64 << 10;
constexpr size_t kMaxFieldBytes = 64 << 10;  // any other string field

// Exit codes of vigil-worker before it can answer with a response.
constexpr int kExitUsage = 64;
constexpr int kExitParentGone = 65;    // getppid() is not the launching supervisor
constexpr int kExitHandshake = 66;     // version or build mismatch, or no handshake
constexpr int kExitProtocol = 67;      // corrupt or missing request
constexpr int kExitCgroupVerify = 68;  // the child is not in the cgroup it was moved to
constexpr int kExitSetup = 69;         // rlimits, descriptors or the launch barrier failed
constexpr int kExitSandbox = 70;       // no_new_privs, the capability drop or the seccomp filter failed
constexpr int kExitExecFailed = 127;

enum class MessageType : uint16_t {
  kHandshake = 1,
  kRequest = 2,
  kProgress = 3,
  kResponse = 4,
  kCatalogCall = 5,    // worker -> supervisor
  kCatalogAnswer = 6,  // supervisor -> worker
};

// The build both sides must share; compiled into vigil_worker, so the server
// and the worker built from one tree agree.
std::string_view BuildId();

struct Handshake {
  uint32_t protocol_version = kProtocolVersion;
  std::string build_id;

  bool operator==(const Handshake&) const = default;
};

struct Request {
  AttemptIdentity attempt;
  index::JobRequest job;         // the one provider call
  std::string failpoints;        // failpoint spec armed in the worker (failpoint.h grammar)
  bool secret_follows = false;   // a secret arrives on the secret pipe
  bool version_catalog = false;  // commit through the supervisor's catalog (kCatalogCall)
  // The Lance runner of an external Lance table's job (lance.node, lance.runner).
  std::string lance_node;
  std::string lance_runner;

  bool operator==(const Request&) const = default;
};

// A worker's call on its dataset's version catalog (storage/version_catalog.h): Latest(),
// or Claim() of a version with the commit's job and attempt.
struct CatalogCall {
  bool claim = false;
  uint64_t version = 0;
  std::string manifest;
  std::string operation;
  std::optional<int64_t> job_id;
  std::string attempt_id;

  bool operator==(const CatalogCall&) const = default;
};

// The supervisor's answer: the call's status and, for Latest(), the newest version.
struct CatalogAnswer {
  StatusCode code = StatusCode::kOk;
  std::string message;  // sanitized, <= kMaxMessageBytes
  std::optional<uint64_t> latest_version;
  std::string latest_manifest;

  bool operator==(const CatalogAnswer&) const = default;
};

struct Progress {
  std::string phase;
  uint64_t done = 0;
  uint64_t total = 0;

  bool operator==(const Progress&) const = default;
};

struct Response {
  AttemptIdentity attempt;
  bool invoked = false;
  int32_t native_return = 0;
  StatusCode code = StatusCode::kOk;
  std::string message;  // sanitized, <= kMaxMessageBytes
  std::optional<int64_t> committed_version;

  bool operator==(const Response&) const = default;
};

// Encodes one complete frame (header, payload, checksum).
std::string EncodeFrame(MessageType type, std::string_view payload);
std::string EncodeHandshake(const Handshake& m);
std::string EncodeRequest(const Request& m);
std::string EncodeProgress(const Progress& m);
std::string EncodeResponse(const Response& m);
std::string EncodeCatalogCall(const CatalogCall& m);
std::string EncodeCatalogAnswer(const CatalogAnswer& m);

struct Frame {
  MessageType type = MessageType::kHandshake;
  std::string payload;
};

// Payload decoders: Corruption for truncated, oversized, trailing or invalid content.
Result<Handshake> DecodeHandshake(std::string_view payload);
Result<Request> DecodeRequest(std::string_view payload);
Result<Progress> DecodeProgress(std::string_view payload);
Result<Response> DecodeResponse(std::string_view payload);
Result<CatalogCall> DecodeCatalogCall(std::string_view payload);
Result<CatalogAnswer> DecodeCatalogAnswer(std::string_view payload);

// Incremental decoding of a byte stream into frames. After the first error
// every later call returns the same error (a stream is never resynchronized).
class FrameReader {
 public:
  void Append(std::string_view bytes) { buffer_.append(bytes.data(), bytes.size()); }
  // The next complete frame, nullopt when more bytes are needed, Corruption for a
  // bad magic, unknown type, nonzero flags, length over kMaxFramePayload or checksum mismatch.
  Result<std::optional<Frame>> Next();
  // Bytes received but not yet part of a returned frame (a partial frame at EOF).
  size_t pending() const { return buffer_.size() - pos_; }

 private:
  std::string buffer_;
  size_t pos_ = 0;
  Status error_;
};

// A worker or provider message made safe for the response: every occurrence of
// `secret` (when not empty) replaced by "***", control characters removed,
// invalid UTF-8 replaced by '?', cut to at most kMaxMessageBytes on a character boundary.
std::string SanitizeMessage(std::string_view message, std::string_view secret = {});

// Overwrites every byte of `s`'s buffer, its unused capacity included (a moved-from
// short string keeps its bytes there), then clears it. Survives optimization.
void ZeroizeString(std::string* s);

// Blocking helpers over pipe descriptors (EINTR retried).
// Writes all of `bytes`; IOError (EPIPE included) otherwise.
Status WriteAll(int fd, std::string_view bytes);
// Reads frames until one is complete; Corruption on a bad frame, IOError on EOF or a read error.
Result<Frame> ReadFrame(int fd, FrameReader* reader);

}  // namespace vigil::worker
