// Builds a full-text segment's native postings from the tokens FTS5 indexes.
// When `parallel`, the build thread hands each document's tokens over in
// batches, and indexing them (a hash lookup and an append per token) and
// encoding the file run on an indexing thread of the builder's own, beside
// FTS5's tokenizing and merging; otherwise (or when no thread can be started)
// each token is indexed as it comes.
//
// Thread safety: BeginDocument, AddToken, EndDocument, Finish and TakeFile
// are called from one thread; the indexing thread touches only the batches
// handed over and the term table.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "index/fts_postings.h"
#include "vigil/common/mutex.h"
#include "vigil/common/status.h"

namespace vigil::index::fts_internal {

class PostingsBuilder {
 public:
  explicit PostingsBuilder(bool parallel);
  ~PostingsBuilder();
  PostingsBuilder(const PostingsBuilder&) = delete;
  PostingsBuilder& operator=(const PostingsBuilder&) = delete;

  void BeginDocument(RowAddress row);
  // One token of the current document; a colocated token adds no length.
  void AddToken(std::string_view token, bool colocated);
  void EndDocument();
  bool in_document() const { return in_document_; }
  uint64_t documents() const { return rows_.size(); }
  uint64_t total_tokens() const { return total_tokens_; }
  // No more documents: the last batch is indexed and the file encoded.
  void Finish();
  // The bytes of `postings.bin`, once Finish's work is done; ResourceExhausted
  // when the indexing thread ran out of memory (the build thread's own failed
  // allocations throw std::bad_alloc).
  Result<std::string> TakeFile();

 private:
  struct Batch {
    uint32_t first_doc = 0;
    std::vector<uint32_t> doc_ends;    // token index past each document's last
    std::vector<uint32_t> token_ends;  // byte offset past each token's last
    std::string bytes;
  };

  void Submit();
  void RunIndexer();
  // Runs `fn` on the indexing thread; a failed allocation is noted, not thrown.
  template <typename Fn>
  void IndexOrNoteFailure(Fn&& fn);
  void IndexBatch(const Batch& batch);
  // One occurrence of `key` in document `doc` (documents arrive in ascending order).
  void AddPosting(std::string_view key, uint32_t doc);
  uint32_t FindOrAdd(std::string_view key);
  void Grow();
  std::string Encode() const;

  // The build thread's.
  bool parallel_;  // cleared when the indexing thread cannot be started
  std::vector<RowAddress> rows_;
  std::vector<uint32_t> lengths_;
  uint64_t total_tokens_ = 0;
  bool in_document_ = false;
  bool finished_ = false;
  Batch filling_;

  // The indexer's (the indexing thread's when parallel); rows_ and lengths_
  // are read there only after Finish handed the last batch over.
  std::vector<TermPostings> terms_;
  std::vector<uint64_t> slots_;  // open addressing: hash's high half << 32 | term index + 1; 0 is free
  std::string file_;
  bool out_of_memory_ = false;  // read by the build thread after the join

  Mutex mu_;
  std::condition_variable changed_;
  std::deque<Batch> queue_ VIGIL_GUARDED_BY(mu_);
  bool input_done_ VIGIL_GUARDED_BY(mu_) = false;
  bool abandoned_ VIGIL_GUARDED_BY(mu_) = false;
  std::thread indexer_;
};

}  // namespace vigil::index::fts_internal
