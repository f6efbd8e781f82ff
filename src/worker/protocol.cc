#include "vigil/worker/protocol.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "vigil/common/byte_io.h"
#include "vigil/common/checksum.h"

#ifndef VIGIL_WORKER_BUILD_ID
#define VIGIL_WORKER_BUILD_ID "dev"
#endif

namespace vigil::worker {

namespace {

constexpr size_t kMaxPhaseBytes = 64;
constexpr size_t kMaxColumns = 16;

void PutString(std::string* out, std::string_view s) {
  PutU32(out, static_cast<uint32_t>(s.size()));
  out->append(s.data(), s.size());
}
void PutI64(std::string* out, int64_t v) { PutU64(out, static_cast<uint64_t>(v)); }

// Reads payload fields; the first failure sticks and names the field.
class PayloadReader {
 public:
  explicit PayloadReader(std::string_view data) : r_(data) {}

  void String(std::string* out, const char* field, size_t max = kMaxFieldBytes) {
    uint32_t n = 0;
    std::string_view bytes;
    if (!ok()) return;
    if (!r_.U32(&n) || n > max || !r_.Bytes(n, &bytes)) return Fail(field);
    out->assign(bytes.data(), bytes.size());
  }
  void I64(int64_t* v, const char* field) {
    if (ok() && !r_.I64(v)) Fail(field);
  }
  void U64(uint64_t* v, const char* field) {
    if (ok() && !r_.U64(v)) Fail(field);
  }
  void U32(uint32_t* v, const char* field) {
    if (ok() && !r_.U32(v)) Fail(field);
  }
  void I32(int32_t* v, const char* field) {
    if (ok() && !r_.I32(v)) Fail(field);
  }
  void Bool(bool* v, const char* field) {
    uint8_t b = 0;
    if (!ok()) return;
    if (!r_.U8(&b) || b > 1) return Fail(field);
    *v = b == 1;
  }
  void U8(uint8_t* v, const char* field) {
    if (ok() && !r_.U8(v)) Fail(field);
  }
  void Fail(const char* field) {
    if (ok()) status_ = Status::Corruption(std::string("worker protocol: bad or truncated field '") + field + "'");
  }
  Status Finish(const char* message) {
    if (ok() && r_.remaining() != 0) {
      status_ = Status::Corruption(std::string("worker protocol: trailing bytes after ") + message);
    }
    return status_;
  }
  bool ok() const { return status_.ok(); }

 private:
  ByteReader r_;
  Status status_;
};

void PutAttempt(std::string* out, const AttemptIdentity& a) {
  PutString(out, a.executor_node_id);
  PutI64(out, a.node_epoch);
  PutString(out, a.attempt_id);
  PutI64(out, a.attempt_number);
  PutI64(out, a.dispatch_generation);
  PutI64(out, a.leader_epoch);
  PutI64(out, a.deadline_at_ms);
}

void ReadAttempt(PayloadReader* r, AttemptIdentity* a) {
  r->String(&a->executor_node_id, "executor_node_id", 1024);
  r->I64(&a->node_epoch, "node_epoch");
  r->String(&a->attempt_id, "attempt_id", 1024);
  r->I64(&a->attempt_number, "attempt_number");
  r->I64(&a->dispatch_generation, "dispatch_generation");
  r->I64(&a->leader_epoch, "leader_epoch");
  r->I64(&a->deadline_at_ms, "deadline_at_ms");
}

bool KnownType(uint16_t t) { return t >= 1 && t <= 6; }

// Length of the valid UTF-8 sequence starting at s[i], or 0 when invalid.
size_t Utf8Length(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if ((c & 0xe0) == 0xc0) {
    n = 2;
    cp = c & 0x1f;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3;
    cp = c & 0x0f;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    unsigned char d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3f);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
      (cp >= 0xd800 && cp <= 0xdfff)) {
    return 0;
  }
  return n;
}

}  // namespace

std::string_view BuildId() { return VIGIL_WORKER_BUILD_ID; }

std::string EncodeFrame(MessageType type, std::string_view payload) {
  std::string out;
  out.reserve(kFrameHeaderBytes + payload.size() + kFrameTrailerBytes);
  PutU32(&out, kFrameMagic);
  PutU16(&out, static_cast<uint16_t>(type));
  PutU16(&out, 0);
  PutU32(&out, static_cast<uint32_t>(payload.size()));
  out.append(payload.data(), payload.size());
  PutU64(&out, Checksum64(out));
  return out;
}

std::string EncodeHandshake(const Handshake& m) {
  std::string p;
  PutU32(&p, m.protocol_version);
  PutString(&p, m.build_id);
  return EncodeFrame(MessageType::kHandshake, p);
}

std::string EncodeRequest(const Request& m) {
  std::string p;
  PutAttempt(&p, m.attempt);
  PutI64(&p, m.job.job_id);
  PutU8(&p, static_cast<uint8_t>(m.job.operation));
  PutU8(&p, static_cast<uint8_t>(m.job.engine));
  PutString(&p, m.job.locator);
  PutString(&p, m.job.index_name);
  PutU32(&p, static_cast<uint32_t>(m.job.columns.size()));
  for (const auto& c : m.job.columns) PutString(&p, c);
  PutString(&p, m.job.physical_type);
  PutString(&p, m.job.properties_json);
  PutI64(&p, m.job.start_version);
  PutString(&p, m.job.schema_fingerprint);
  PutU64(&p, m.job.caps.max_rows);
  PutU64(&p, m.job.caps.max_fragments);
  PutU32(&p, m.job.caps.max_vector_dimension);
  PutU32(&p, m.job.caps.max_partitions);
  PutU32(&p, m.job.caps.max_sub_vectors);
  PutString(&p, m.failpoints);
  PutU8(&p, m.secret_follows ? 1 : 0);
  PutU8(&p, m.version_catalog ? 1 : 0);
  PutString(&p, m.lance_node);
  PutString(&p, m.lance_runner);
  return EncodeFrame(MessageType::kRequest, p);
}

std::string EncodeCatalogCall(const CatalogCall& m) {
  std::string p;
  PutU8(&p, m.claim ? 1 : 0);
  PutU64(&p, m.version);
  PutString(&p, m.manifest);
  PutString(&p, m.operation);
  PutU8(&p, m.job_id ? 1 : 0);
  PutI64(&p, m.job_id.value_or(0));
  PutString(&p, m.attempt_id);
  return EncodeFrame(MessageType::kCatalogCall, p);
}

std::string EncodeCatalogAnswer(const CatalogAnswer& m) {
  std::string p;
  PutU32(&p, static_cast<uint32_t>(m.code));
  PutString(&p, m.message.substr(0, kMaxMessageBytes));
  PutU8(&p, m.latest_version ? 1 : 0);
  PutU64(&p, m.latest_version.value_or(0));
  PutString(&p, m.latest_manifest);
  return EncodeFrame(MessageType::kCatalogAnswer, p);
}

std::string EncodeProgress(const Progress& m) {
  std::string p;
  PutString(&p, m.phase.substr(0, kMaxPhaseBytes));
  PutU64(&p, m.done);
  PutU64(&p, m.total);
  return EncodeFrame(MessageType::kProgress, p);
}

std::string EncodeResponse(const Response& m) {
  std::string p;
  PutAttempt(&p, m.attempt);
  PutU8(&p, m.invoked ? 1 : 0);
  PutU32(&p, static_cast<uint32_t>(m.native_return));
  PutU32(&p, static_cast<uint32_t>(m.code));
  PutString(&p, m.message.substr(0, kMaxMessageBytes));
  PutU8(&p, m.committed_version ? 1 : 0);
  PutI64(&p, m.committed_version.value_or(0));
  return EncodeFrame(MessageType::kResponse, p);
}

Result<Handshake> DecodeHandshake(std::string_view payload) {
  PayloadReader r(payload);
  Handshake m;
  r.U32(&m.protocol_version, "protocol_version");
  r.String(&m.build_id, "build_id", 256);
  VIGIL_RETURN_IF_ERROR(r.Finish("the handshake"));
  return m;
}

Result<Request> DecodeRequest(std::string_view payload) {
  PayloadReader r(payload);
  Request m;
  ReadAttempt(&r, &m.attempt);
  r.I64(&m.job.job_id, "job_id");
  uint8_t op = 0;
  r.U8(&op, "operation");
  if (r.ok() && (op < 1 || op > 4)) r.Fail("operation");
  m.job.operation = static_cast<index::JobOperation>(op);
  uint8_t engine = 0;
  r.U8(&engine, "engine");
  if (r.ok() && (engine < 1 || engine > 2)) r.Fail("engine");
  m.job.engine = static_cast<index::TableEngine>(engine);
  r.String(&m.job.locator, "locator");
  r.String(&m.job.index_name, "index_name", 1024);
  uint32_t ncols = 0;
  r.U32(&ncols, "columns");
  if (r.ok() && ncols > kMaxColumns) r.Fail("columns");
  for (uint32_t i = 0; r.ok() && i < ncols; ++i) {
    m.job.columns.emplace_back();
    r.String(&m.job.columns.back(), "column", 1024);
  }
  r.String(&m.job.physical_type, "physical_type", 64);
  r.String(&m.job.properties_json, "properties_json", 4096);
  r.I64(&m.job.start_version, "start_version");
  r.String(&m.job.schema_fingerprint, "schema_fingerprint", 1024);
  r.U64(&m.job.caps.max_rows, "caps.max_rows");
  r.U64(&m.job.caps.max_fragments, "caps.max_fragments");
  r.U32(&m.job.caps.max_vector_dimension, "caps.max_vector_dimension");
  r.U32(&m.job.caps.max_partitions, "caps.max_partitions");
  r.U32(&m.job.caps.max_sub_vectors, "caps.max_sub_vectors");
  r.String(&m.failpoints, "failpoints", 4096);
  r.Bool(&m.secret_follows, "secret_follows");
  r.Bool(&m.version_catalog, "version_catalog");
  r.String(&m.lance_node, "lance_node", 4096);
  r.String(&m.lance_runner, "lance_runner", 4096);
  VIGIL_RETURN_IF_ERROR(r.Finish("the request"));
  return m;
}

Result<CatalogCall> DecodeCatalogCall(std::string_view payload) {
  PayloadReader r(payload);
  CatalogCall m;
  r.Bool(&m.claim, "claim");
  r.U64(&m.version, "version");
  r.String(&m.manifest, "manifest", 1024);
  r.String(&m.operation, "operation", 256);
  bool has_job = false;
  int64_t job = 0;
  r.Bool(&has_job, "has_job_id");
  r.I64(&job, "job_id");
  if (r.ok() && !has_job && job != 0) r.Fail("job_id");
  if (has_job) m.job_id = job;
  r.String(&m.attempt_id, "attempt_id", 1024);
  VIGIL_RETURN_IF_ERROR(r.Finish("a catalog call"));
  return m;
}

Result<CatalogAnswer> DecodeCatalogAnswer(std::string_view payload) {
  PayloadReader r(payload);
  CatalogAnswer m;
  uint32_t code = 0;
  r.U32(&code, "code");
  if (r.ok() && code > static_cast<uint32_t>(kLastStatusCode)) r.Fail("code");
  m.code = static_cast<StatusCode>(code);
  r.String(&m.message, "message", kMaxMessageBytes);
  bool has_latest = false;
  uint64_t latest = 0;
  r.Bool(&has_latest, "has_latest_version");
  r.U64(&latest, "latest_version");
  if (r.ok() && !has_latest && latest != 0) r.Fail("latest_version");
  if (has_latest) m.latest_version = latest;
  r.String(&m.latest_manifest, "latest_manifest", 1024);
  VIGIL_RETURN_IF_ERROR(r.Finish("a catalog answer"));
  return m;
}

Result<Progress> DecodeProgress(std::string_view payload) {
  PayloadReader r(payload);
  Progress m;
  r.String(&m.phase, "phase", kMaxPhaseBytes);
  r.U64(&m.done, "done");
  r.U64(&m.total, "total");
  VIGIL_RETURN_IF_ERROR(r.Finish("a progress message"));
  return m;
}

Result<Response> DecodeResponse(std::string_view payload) {
  PayloadReader r(payload);
  Response m;
  ReadAttempt(&r, &m.attempt);
  r.Bool(&m.invoked, "invoked");
  r.I32(&m.native_return, "native_return");
  uint32_t code = 0;
  r.U32(&code, "code");
  if (r.ok() && code > static_cast<uint32_t>(kLastStatusCode)) r.Fail("code");
  m.code = static_cast<StatusCode>(code);
  r.String(&m.message, "message", kMaxMessageBytes);
  bool has_version = false;
  int64_t version = 0;
  r.Bool(&has_version, "has_committed_version");
  r.I64(&version, "committed_version");
  if (has_version) m.committed_version = version;
  VIGIL_RETURN_IF_ERROR(r.Finish("the response"));
  return m;
}

Result<std::optional<Frame>> FrameReader::Next() {
  if (!error_.ok()) return error_;
  std::string_view rest(buffer_.data() + pos_, buffer_.size() - pos_);
  if (rest.size() < kFrameHeaderBytes) return std::optional<Frame>();
  ByteReader r(rest);
  uint32_t magic = 0, length = 0;
  uint16_t type = 0, flags = 0;
  r.U32(&magic);
  r.U16(&type);
  r.U16(&flags);
  r.U32(&length);
  if (magic != kFrameMagic) {
    error_ = Status::Corruption("worker protocol: bad frame magic");
  } else if (!KnownType(type)) {
    error_ = Status::Corruption("worker protocol: unknown frame type " + std::to_string(type));
  } else if (flags != 0) {
    error_ = Status::Corruption("worker protocol: nonzero frame flags");
  } else if (length > kMaxFramePayload) {
    error_ = Status::Corruption("worker protocol: frame of " + std::to_string(length) + " bytes exceeds the bound");
  }
  if (!error_.ok()) return error_;
  size_t total = kFrameHeaderBytes + length + kFrameTrailerBytes;
  if (rest.size() < total) return std::optional<Frame>();
  uint64_t stored = 0;
  std::memcpy(&stored, rest.data() + kFrameHeaderBytes + length, sizeof stored);
  if (stored != Checksum64(rest.data(), kFrameHeaderBytes + length)) {
    error_ = Status::Corruption("worker protocol: frame checksum mismatch");
    return error_;
  }
  Frame f;
  f.type = static_cast<MessageType>(type);
  f.payload.assign(rest.data() + kFrameHeaderBytes, length);
  pos_ += total;
  if (pos_ == buffer_.size()) {
    buffer_.clear();
    pos_ = 0;
  }
  return std::optional<Frame>(std::move(f));
}

std::string SanitizeMessage(std::string_view message, std::string_view secret) {
  std::string scrubbed(message);
  if (!secret.empty()) {
    for (size_t at = scrubbed.find(secret); at != std::string::npos; at = scrubbed.find(secret, at + 3)) {
      scrubbed.replace(at, secret.size(), "***");
    }
  }
  std::string out;
  out.reserve(std::min(scrubbed.size(), kMaxMessageBytes));
  for (size_t i = 0; i < scrubbed.size();) {
    size_t n = Utf8Length(scrubbed, i);
    std::string_view piece = n == 0 ? std::string_view("?") : std::string_view(scrubbed).substr(i, n);
    i += n == 0 ? 1 : n;
    if (piece.size() == 1 && (static_cast<unsigned char>(piece[0]) < 0x20 || piece[0] == 0x7f)) continue;
    if (out.size() + piece.size() > kMaxMessageBytes) break;
    out.append(piece);
  }
  return out;
}

void ZeroizeString(std::string* s) {
  s->resize(s->capacity());  // never reallocates: exposes the whole buffer
  if (!s->empty()) ::explicit_bzero(s->data(), s->size());
  s->clear();
}

Status WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "worker protocol write");
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::OK();
}

Result<Frame> ReadFrame(int fd, FrameReader* reader) {
  char buf[16384];
  for (;;) {
    VIGIL_ASSIGN_OR_RETURN(std::optional<Frame> f, reader->Next());
    if (f) return std::move(*f);
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "worker protocol read");
    }
    if (n == 0) return Status::IOError("worker protocol: end of stream");
    reader->Append(std::string_view(buf, static_cast<size_t>(n)));
  }
}

}  // namespace vigil::worker
