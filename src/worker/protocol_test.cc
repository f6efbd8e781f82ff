#include "vigil/worker/protocol.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "vigil/common/checksum.h"

namespace vigil::worker {
namespace {

Request SampleRequest() {
  Request r;
  r.attempt = {"node-a", 3, "7-5b0c", 2, 4, 9, 1'700'000'000'123};
  r.job.job_id = 7;
  r.job.operation = index::JobOperation::kReplace;
  r.job.locator = "/data/db/docs.vgl";
  r.job.index_name = "Émb_idx";
  r.job.columns = {"emb"};
  r.job.physical_type = "IVF_PQ";
  r.job.properties_json = R"({"metric":"l2"})";
  r.job.start_version = 12;
  r.job.schema_fingerprint = "f00d";
  r.job.caps = {uint64_t{1} << 40, 3, 8192, 100'000, 512};  // the admitted caps, not the defaults
  r.failpoints = "worker.before_invoke=kill";
  r.secret_follows = true;
  r.version_catalog = true;
  return r;
}

Response SampleResponse() {
  Response r;
  r.attempt = SampleRequest().attempt;
  r.invoked = true;
  r.native_return = 5;
  r.code = StatusCode::kCommitConflict;
  r.message = "COMMIT_CONFLICT: lost the race";
  r.committed_version = 13;
  return r;
}

// Splits `bytes` into its frames with one reader, failing the test on error.
std::vector<Frame> Frames(const std::string& bytes) {
  FrameReader reader;
  reader.Append(bytes);
  std::vector<Frame> out;
  for (;;) {
    auto f = reader.Next();
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    if (!f.ok() || !f->has_value()) return out;
    out.push_back(**f);
  }
}

TEST(ProtocolTest, EveryMessageRoundTrips) {
  Handshake h{kProtocolVersion, std::string(BuildId())};
  Request req = SampleRequest();
  Progress prog{"training", 3, 10};
  Response resp = SampleResponse();
  std::string stream = EncodeHandshake(h) + EncodeRequest(req) + EncodeProgress(prog) + EncodeResponse(resp);
  auto frames = Frames(stream);
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_EQ(frames[0].type, MessageType::kHandshake);
  EXPECT_EQ(*DecodeHandshake(frames[0].payload), h);
  EXPECT_EQ(*DecodeRequest(frames[1].payload), req);
  EXPECT_EQ(*DecodeProgress(frames[2].payload), prog);
  EXPECT_EQ(*DecodeResponse(frames[3].payload), resp);
  resp.committed_version.reset();
  resp.invoked = false;
  EXPECT_EQ(*DecodeResponse(Frames(EncodeResponse(resp))[0].payload), resp);
}

TEST(ProtocolTest, CatalogCallsAndAnswersRoundTripAndRejectBadValues) {
  const CatalogCall claim{true, 9, "_versions/9.claim-x", "CREATE_INDEX", 7, "7-attempt"};
  const CatalogCall latest{};
  const CatalogAnswer refused{StatusCode::kFailedPrecondition, "attempt 7-attempt may no longer commit", {}, ""};
  const CatalogAnswer newest{StatusCode::kOk, "", 8, "_versions/8.manifest"};
  auto frames = Frames(EncodeCatalogCall(claim) + EncodeCatalogCall(latest) + EncodeCatalogAnswer(refused) +
                       EncodeCatalogAnswer(newest));
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_EQ(frames[0].type, MessageType::kCatalogCall);
  EXPECT_EQ(*DecodeCatalogCall(frames[0].payload), claim);
  EXPECT_EQ(*DecodeCatalogCall(frames[1].payload), latest);
  EXPECT_EQ(frames[2].type, MessageType::kCatalogAnswer);
  EXPECT_EQ(*DecodeCatalogAnswer(frames[2].payload), refused);
  EXPECT_EQ(*DecodeCatalogAnswer(frames[3].payload), newest);
  auto payload = [](const std::string& frame) {
    return frame.substr(kFrameHeaderBytes, frame.size() - kFrameHeaderBytes - kFrameTrailerBytes);
  };
  const std::string call = payload(EncodeCatalogCall(claim));
  for (size_t cut = 0; cut < call.size(); ++cut) {
    EXPECT_EQ(DecodeCatalogCall(call.substr(0, cut)).status().code(), StatusCode::kCorruption) << cut;
  }
  EXPECT_EQ(DecodeCatalogCall(call + "x").status().code(), StatusCode::kCorruption);
  std::string bad_code = payload(EncodeCatalogAnswer(newest));
  bad_code[0] = 99;
  EXPECT_EQ(DecodeCatalogAnswer(bad_code).status().code(), StatusCode::kCorruption);
}

TEST(ProtocolTest, ReaderWaitsForCompleteFramesAcrossChunks) {
  std::string bytes = EncodeRequest(SampleRequest()) + EncodeProgress({"writing", 1, 1});
  FrameReader reader;
  size_t frames = 0;
  for (char c : bytes) {
    reader.Append(std::string_view(&c, 1));
    auto f = reader.Next();
    ASSERT_TRUE(f.ok());
    if (f->has_value()) ++frames;
  }
  EXPECT_EQ(frames, 2u);
  EXPECT_EQ(reader.pending(), 0u);
  reader.Append(bytes.substr(0, 20));
  EXPECT_FALSE(reader.Next()->has_value());
  EXPECT_EQ(reader.pending(), 20u);
}

TEST(ProtocolTest, CorruptFramesAreRejectedAndTheErrorSticks) {
  const std::string good = EncodeProgress({"sampling", 0, 4});
  auto expect_corrupt = [](const std::string& bytes) {
    FrameReader reader;
    reader.Append(bytes);
    auto f = reader.Next();
    ASSERT_FALSE(f.ok());
    EXPECT_EQ(f.status().code(), StatusCode::kCorruption);
    reader.Append(EncodeProgress({"x", 0, 0}));
    EXPECT_EQ(reader.Next().status().code(), StatusCode::kCorruption);  // never resynchronized
  };
  std::string bad_magic = good;
  bad_magic[0] ^= 1;
  expect_corrupt(bad_magic);
  std::string bad_type = good;
  bad_type[4] = 9;
  expect_corrupt(bad_type);
  std::string bad_flags = good;
  bad_flags[6] = 1;
  expect_corrupt(bad_flags);
  std::string bad_payload = good;
  bad_payload[kFrameHeaderBytes] ^= 0x40;
  expect_corrupt(bad_payload);
  std::string bad_sum = good;
  bad_sum.back() ^= 1;
  expect_corrupt(bad_sum);
  // An oversized length is refused from the header alone, before any payload arrives.
  std::string huge = good.substr(0, kFrameHeaderBytes);
  uint32_t len = kMaxFramePayload + 1;
  std::memcpy(&huge[8], &len, 4);
  expect_corrupt(huge);
}

TEST(ProtocolTest, PayloadDecodersRejectTruncationTrailingBytesAndBadValues) {
  auto payload = [](const std::string& frame) {
    return frame.substr(kFrameHeaderBytes, frame.size() - kFrameHeaderBytes - kFrameTrailerBytes);
  };
  std::string req = payload(EncodeRequest(SampleRequest()));
  for (size_t cut = 0; cut < req.size(); ++cut) {
    EXPECT_EQ(DecodeRequest(req.substr(0, cut)).status().code(), StatusCode::kCorruption) << cut;
  }
  EXPECT_EQ(DecodeRequest(req + "x").status().code(), StatusCode::kCorruption);
  std::string resp = payload(EncodeResponse(SampleResponse()));
  EXPECT_EQ(DecodeResponse(resp + "x").status().code(), StatusCode::kCorruption);
  // The status code must be one of the known codes; `invoked` must be 0 or 1.
  Response r = SampleResponse();
  std::string bytes = payload(EncodeResponse(r));
  size_t attempt_bytes = 4 + r.attempt.executor_node_id.size() + 8 + 4 + r.attempt.attempt_id.size() + 8 * 4;
  std::string bad_invoked = bytes;
  bad_invoked[attempt_bytes] = 2;
  EXPECT_EQ(DecodeResponse(bad_invoked).status().code(), StatusCode::kCorruption);
  std::string bad_code = bytes;
  bad_code[attempt_bytes + 1 + 4] = 99;
  EXPECT_EQ(DecodeResponse(bad_code).status().code(), StatusCode::kCorruption);
  // A message longer than the bound is refused.
  std::string long_msg = bytes;
  uint32_t n = kMaxMessageBytes + 1;
  std::memcpy(&long_msg[attempt_bytes + 1 + 4 + 4], &n, 4);
  EXPECT_EQ(DecodeResponse(long_msg).status().code(), StatusCode::kCorruption);
}

TEST(ProtocolTest, SanitizeScrubsSecretsControlsInvalidUtf8AndBoundsLength) {
  EXPECT_EQ(SanitizeMessage("open s3cr3t failed: s3cr3t", "s3cr3t"), "open *** failed: ***");
  EXPECT_EQ(SanitizeMessage("a\nb\tc\x7f"), "abc");
  EXPECT_EQ(SanitizeMessage("bad \xff byte \xc3"), "bad ? byte ?");
  EXPECT_EQ(SanitizeMessage("é ok"), "é ok");
  std::string long_text(2000, 'x');
  EXPECT_EQ(SanitizeMessage(long_text).size(), kMaxMessageBytes);
  // Cut on a character boundary: 1023 ASCII bytes then a two-byte character.
  std::string edge = std::string(1023, 'a') + "é";
  EXPECT_EQ(SanitizeMessage(edge), std::string(1023, 'a'));
}

TEST(ProtocolTest, PipeHelpersCarryFramesAndReportEndOfStream) {
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  ASSERT_TRUE(WriteAll(p[1], EncodeHandshake({kProtocolVersion, "b"}) + EncodeProgress({"x", 1, 2})).ok());
  ::close(p[1]);
  FrameReader reader;
  auto a = ReadFrame(p[0], &reader);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->type, MessageType::kHandshake);
  auto b = ReadFrame(p[0], &reader);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->type, MessageType::kProgress);
  EXPECT_EQ(ReadFrame(p[0], &reader).status().code(), StatusCode::kIOError);
  ::close(p[0]);
}

TEST(ProtocolTest, ZeroizeStringWipesTheWholeBuffer) {
  std::string s = "short-secret";
  const char* buf = s.data();
  size_t cap = s.capacity();
  ZeroizeString(&s);
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.data(), buf);  // the same buffer, now zero
  for (size_t i = 0; i < cap; ++i) EXPECT_EQ(buf[i], '\0') << i;
}

}  // namespace
}  // namespace vigil::worker
