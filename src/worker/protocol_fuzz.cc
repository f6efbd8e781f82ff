// Fuzz target for the worker protocol decoder. Each input is fed to a
// FrameReader whole and byte by byte (the two must agree), and its payload is
// reframed under a valid header and checksum for every message type so that
// mutations reach the payload decoders. Nothing may crash; every failure must
// be Corruption; a message that decodes must re-encode to the same message.
#include <cstdint>
#include <string>
#include <vector>

#include "vigil/worker/protocol.h"

namespace {

using namespace vigil::worker;

void CheckPayload(MessageType type, const std::string& payload) {
  switch (type) {
    case MessageType::kHandshake: {
      auto m = DecodeHandshake(payload);
      VIGIL_CHECK(m.ok() || m.status().code() == vigil::StatusCode::kCorruption);
      if (m.ok()) VIGIL_CHECK(EncodeHandshake(*m) == EncodeFrame(type, payload));
      break;
    }
    case MessageType::kRequest: {
      auto m = DecodeRequest(payload);
      VIGIL_CHECK(m.ok() || m.status().code() == vigil::StatusCode::kCorruption);
      if (m.ok()) VIGIL_CHECK(EncodeRequest(*m) == EncodeFrame(type, payload));
      break;
    }
    case MessageType::kProgress: {
      auto m = DecodeProgress(payload);
      VIGIL_CHECK(m.ok() || m.status().code() == vigil::StatusCode::kCorruption);
      if (m.ok()) VIGIL_CHECK(EncodeProgress(*m) == EncodeFrame(type, payload));
      break;
    }
    case MessageType::kResponse: {
      auto m = DecodeResponse(payload);
      VIGIL_CHECK(m.ok() || m.status().code() == vigil::StatusCode::kCorruption);
      if (m.ok()) {
        std::string again = EncodeResponse(*m);
        auto back =
            DecodeResponse(again.substr(kFrameHeaderBytes, again.size() - kFrameHeaderBytes - kFrameTrailerBytes));
        VIGIL_CHECK(back.ok() && *back == *m);
      }
      break;
    }
    case MessageType::kCatalogCall: {
      auto m = DecodeCatalogCall(payload);
      VIGIL_CHECK(m.ok() || m.status().code() == vigil::StatusCode::kCorruption);
      if (m.ok()) VIGIL_CHECK(EncodeCatalogCall(*m) == EncodeFrame(type, payload));
      break;
    }
    case MessageType::kCatalogAnswer: {
      auto m = DecodeCatalogAnswer(payload);
      VIGIL_CHECK(m.ok() || m.status().code() == vigil::StatusCode::kCorruption);
      if (m.ok()) {
        std::string again = EncodeCatalogAnswer(*m);
        auto back =
            DecodeCatalogAnswer(again.substr(kFrameHeaderBytes, again.size() - kFrameHeaderBytes - kFrameTrailerBytes));
        VIGIL_CHECK(back.ok() && *back == *m);
      }
      break;
    }
  }
}

// Drains `reader`; returns the frames, or the first error (which must be Corruption).
std::vector<Frame> Drain(FrameReader* reader, bool* failed) {
  std::vector<Frame> out;
  for (;;) {
    auto f = reader->Next();
    if (!f.ok()) {
      VIGIL_CHECK(f.status().code() == vigil::StatusCode::kCorruption);
      *failed = true;
      return out;
    }
    if (!f->has_value()) return out;
    out.push_back(std::move(**f));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string input(reinterpret_cast<const char*>(data), size);
  FrameReader whole;
  whole.Append(input);
  bool whole_failed = false;
  std::vector<Frame> frames = Drain(&whole, &whole_failed);
  FrameReader bytewise;
  bool bytewise_failed = false;
  std::vector<Frame> frames2;
  for (char c : input) {
    bytewise.Append(std::string_view(&c, 1));
    for (auto& f : Drain(&bytewise, &bytewise_failed)) frames2.push_back(std::move(f));
    if (bytewise_failed) break;
  }
  VIGIL_CHECK(whole_failed == bytewise_failed && frames.size() == frames2.size());
  for (const Frame& f : frames) CheckPayload(f.type, f.payload);
  if (size > kFrameHeaderBytes) {
    std::string payload = input.substr(kFrameHeaderBytes, size - kFrameHeaderBytes);
    if (payload.size() <= kMaxFramePayload) {
      for (auto t : {MessageType::kHandshake, MessageType::kRequest, MessageType::kProgress, MessageType::kResponse,
                     MessageType::kCatalogCall, MessageType::kCatalogAnswer}) {
        CheckPayload(t, payload);
      }
    }
  }
  return 0;
}

void VigilFuzzSeeds(std::vector<std::string>* out) {
  out->push_back(EncodeHandshake({kProtocolVersion, std::string(BuildId())}));
  Request req;
  req.attempt = {"node-a", 3, "7-attempt", 1, 2, 5, 1'700'000'000'000};
  req.job.job_id = 7;
  req.job.locator = "/data/db/docs.vgl";
  req.job.index_name = "emb_idx";
  req.job.columns = {"emb"};
  req.job.physical_type = "IVF_PQ";
  req.job.properties_json = R"({"metric":"l2","num_partitions":4})";
  req.job.start_version = 2;
  req.job.schema_fingerprint = "abc123";
  req.failpoints = "worker.before_invoke=error(IO_ERROR)";
  req.secret_follows = true;
  out->push_back(EncodeRequest(req));
  out->push_back(EncodeProgress({"training", 3, 10}));
  Response resp;
  resp.attempt = req.attempt;
  resp.invoked = true;
  resp.code = vigil::StatusCode::kCommitConflict;
  resp.native_return = 5;
  resp.message = "COMMIT_CONFLICT: version 3 exists";
  resp.committed_version = 4;
  out->push_back(EncodeResponse(resp));
  out->push_back(EncodeProgress({"writing", 1, 1}) + EncodeResponse(resp));
  out->push_back(EncodeCatalogCall({true, 3, "_versions/3.claim-x", "CREATE_INDEX", 7, "7-attempt"}));
  out->push_back(EncodeCatalogAnswer({vigil::StatusCode::kOk, "", 2, "_versions/2.manifest"}));
}
