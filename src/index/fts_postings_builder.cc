// Native postings built beside FTS5; see fts_postings_builder.h.
#include "index/fts_postings_builder.h"

#include <algorithm>
#include <new>
#include <system_error>

#include "vigil/common/checksum.h"
#include "vigil/common/failpoint.h"

namespace vigil::index::fts_internal {

namespace {

constexpr size_t kBatchDocs = 512;
constexpr size_t kMaxQueuedBatches = 8;

}  // namespace

PostingsBuilder::PostingsBuilder(bool parallel) : parallel_(parallel) {
  if (!parallel_) return;
  try {
#ifdef VIGIL_FAILPOINTS
    if (Status fp = failpoint::Hit("fts.postings_thread"); !fp.ok()) {
      throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again), fp.message());
    }
#endif
    indexer_ = std::thread([this] { RunIndexer(); });
  } catch (const std::system_error&) {
    parallel_ = false;  // no thread to be had (a pids limit): index on the build thread
  }
}

PostingsBuilder::~PostingsBuilder() {
  if (!indexer_.joinable()) return;
  {
    MutexLock lock(&mu_);
    input_done_ = true;
    abandoned_ = true;
  }
  changed_.notify_all();
  indexer_.join();
}

void PostingsBuilder::BeginDocument(RowAddress row) {
  VIGIL_CHECK(!in_document_ && !finished_);
  in_document_ = true;
  rows_.push_back(row);
  lengths_.push_back(0);
}

void PostingsBuilder::AddToken(std::string_view token, bool colocated) {
  VIGIL_CHECK(in_document_);
  if (parallel_) {
    filling_.bytes.append(token.substr(0, kMaxTermBytes));
    filling_.token_ends.push_back(static_cast<uint32_t>(filling_.bytes.size()));
  } else {
    AddPosting(token.substr(0, kMaxTermBytes), static_cast<uint32_t>(rows_.size() - 1));
  }
  if (!colocated) {
    ++lengths_.back();
    ++total_tokens_;
  }
}

void PostingsBuilder::EndDocument() {
  VIGIL_CHECK(in_document_);
  in_document_ = false;
  if (!parallel_) return;
  filling_.doc_ends.push_back(static_cast<uint32_t>(filling_.token_ends.size()));
  if (filling_.doc_ends.size() >= kBatchDocs) Submit();
}

void PostingsBuilder::Submit() {
  Batch next;
  next.first_doc = static_cast<uint32_t>(rows_.size());
  std::swap(next, filling_);
  {
    MutexLock lock(&mu_);
    lock.Wait(changed_, [this]() VIGIL_REQUIRES(mu_) { return queue_.size() < kMaxQueuedBatches; });
    queue_.push_back(std::move(next));
  }
  changed_.notify_all();
}

void PostingsBuilder::Finish() {
  VIGIL_CHECK(!in_document_ && !finished_);
  finished_ = true;
  if (!parallel_) {
    file_ = Encode();
    return;
  }
  if (!filling_.doc_ends.empty()) Submit();
  {
    MutexLock lock(&mu_);
    input_done_ = true;
  }
  changed_.notify_all();
}

Result<std::string> PostingsBuilder::TakeFile() {
  VIGIL_CHECK(finished_);
  if (indexer_.joinable()) indexer_.join();
  if (out_of_memory_) return Status::ResourceExhausted("out of memory while indexing full-text postings");
  return std::move(file_);
}

void PostingsBuilder::RunIndexer() {
  for (;;) {
    Batch batch;
    {
      MutexLock lock(&mu_);
      lock.Wait(changed_, [this]() VIGIL_REQUIRES(mu_) { return !queue_.empty() || input_done_; });
      if (abandoned_) return;
      if (queue_.empty()) break;
      batch = std::move(queue_.front());
      queue_.pop_front();
    }
    changed_.notify_all();
    // After a failed allocation the rest is only drained, so the build thread never waits forever.
    if (!out_of_memory_) IndexOrNoteFailure([&] { IndexBatch(batch); });
  }
  if (!out_of_memory_) IndexOrNoteFailure([&] { file_ = Encode(); });
}

template <typename Fn>
void PostingsBuilder::IndexOrNoteFailure(Fn&& fn) {
  try {
    fn();
  } catch (const std::bad_alloc&) {
    out_of_memory_ = true;
    terms_.clear();
    terms_.shrink_to_fit();
  }
}

void PostingsBuilder::IndexBatch(const Batch& batch) {
  uint32_t token = 0, start = 0;
  for (size_t d = 0; d < batch.doc_ends.size(); ++d) {
    auto doc = static_cast<uint32_t>(batch.first_doc + d);
    for (; token < batch.doc_ends[d]; ++token) {
      uint32_t end = batch.token_ends[token];
      AddPosting(std::string_view(batch.bytes).substr(start, end - start), doc);
      start = end;
    }
  }
}

void PostingsBuilder::AddPosting(std::string_view key, uint32_t doc) {
#ifdef VIGIL_FAILPOINTS
  if (!failpoint::Hit("fts.postings_allocation").ok()) throw std::bad_alloc();
#endif
  TermPostings& t = terms_[FindOrAdd(key)];
  if (!t.docs.empty() && t.docs.back() == doc) {
    ++t.tfs.back();
  } else {
    t.docs.push_back(doc);
    t.tfs.push_back(1);
  }
}

uint32_t PostingsBuilder::FindOrAdd(std::string_view key) {
  if (terms_.size() * 2 >= slots_.size()) Grow();
  uint64_t hash = Checksum64(key);
  uint64_t tag = hash >> 32 << 32;
  size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    uint64_t slot = slots_[i];
    if (slot == 0) {
      slots_[i] = tag | (terms_.size() + 1);
      terms_.push_back(TermPostings{std::string(key), {}, {}});
      return static_cast<uint32_t>(terms_.size() - 1);
    }
    auto index = static_cast<uint32_t>(slot) - 1;
    if ((slot & ~0xffffffffULL) == tag && terms_[index].key == key) return index;
  }
}

void PostingsBuilder::Grow() {
  slots_.assign(std::max<size_t>(1024, slots_.size() * 2), 0);
  size_t mask = slots_.size() - 1;
  for (size_t t = 0; t < terms_.size(); ++t) {
    uint64_t hash = Checksum64(terms_[t].key);
    size_t i = hash & mask;
    while (slots_[i] != 0) i = (i + 1) & mask;
    slots_[i] = (hash >> 32 << 32) | (t + 1);
  }
}

std::string PostingsBuilder::Encode() const {
  std::vector<const TermPostings*> terms;
  terms.reserve(terms_.size());
  for (const TermPostings& t : terms_) terms.push_back(&t);
  return EncodePostings(rows_, lengths_, total_tokens_, std::move(terms));
}

}  // namespace vigil::index::fts_internal
