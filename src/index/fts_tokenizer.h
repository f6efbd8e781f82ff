// FTS5's tokenizers used beside FTS5 tables: capturing the tokens FTS5
// indexes while a segment is built (the table's outermost tokenizer is wrapped
// on the build connection, so each document is tokenized once, by FTS5), and
// tokenizing query words exactly as FTS5's query parser does.
//
// Thread safety: CaptureDocumentTokens binds to one connection and its
// builder (single-threaded); QueryTokenizer is thread-safe (a mutex).
#pragma once

#include <sqlite3.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "index/fts_postings_builder.h"
#include "index/fts_sqlite.h"
#include "vigil/common/mutex.h"
#include "vigil/common/status.h"
#include "vigil/index/index_spec.h"

namespace vigil::index::fts_internal {

// On `db`, before the FTS5 table is created: every token FTS5 indexes for a
// document while `builder` is inside a document is also added to `builder`.
// `builder` must outlive `db`.
Status CaptureDocumentTokens(sqlite3* db, const FtsParams& params, PostingsBuilder* builder);

class QueryTokenizer {
 public:
  static Result<std::unique_ptr<QueryTokenizer>> Create(const FtsParams& params);
  ~QueryTokenizer();
  // The tokens FTS5 makes of `word` in a query.
  Result<std::vector<std::string>> Tokenize(std::string_view word) const;

 private:
  QueryTokenizer() = default;
  SqliteDb db_;  // owns the tokenizer module
  fts5_tokenizer module_{};
  mutable Mutex mu_;
  Fts5Tokenizer* tokenizer_ VIGIL_PT_GUARDED_BY(mu_) = nullptr;
};

}  // namespace vigil::index::fts_internal
