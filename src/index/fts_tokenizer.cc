// Token capture during builds and query-word tokenization; see fts_tokenizer.h.
#include "index/fts_tokenizer.h"

#include <new>
#include <sstream>

namespace vigil::index::fts_internal {

namespace {

// The tokenizer module that was registered under the wrapped name, and the builder fed.
struct CaptureModule {
  fts5_tokenizer inner{};
  void* inner_context = nullptr;
  PostingsBuilder* builder = nullptr;
};

struct CaptureInstance {
  CaptureModule* module = nullptr;
  Fts5Tokenizer* inner = nullptr;
};

struct CaptureCall {
  void* fts5_context;
  int (*fts5_token)(void*, int, const char*, int, int, int);
  PostingsBuilder* builder;
};

int CaptureCreate(void* context, const char** args, int nargs, Fts5Tokenizer** out) {
  auto* module = static_cast<CaptureModule*>(context);
  auto* instance = new CaptureInstance{module, nullptr};
  int rc = module->inner.xCreate(module->inner_context, args, nargs, &instance->inner);
  if (rc != SQLITE_OK) {
    delete instance;
    return rc;
  }
  *out = reinterpret_cast<Fts5Tokenizer*>(instance);
  return SQLITE_OK;
}

void CaptureDelete(Fts5Tokenizer* tokenizer) {
  auto* instance = reinterpret_cast<CaptureInstance*>(tokenizer);
  instance->module->inner.xDelete(instance->inner);
  delete instance;
}

int CaptureToken(void* context, int flags, const char* token, int bytes, int start, int end) {
  auto* call = static_cast<CaptureCall*>(context);
  try {  // nothing may unwind through SQLite
    call->builder->AddToken(std::string_view(token, static_cast<size_t>(bytes)), (flags & FTS5_TOKEN_COLOCATED) != 0);
  } catch (const std::bad_alloc&) {
    return SQLITE_NOMEM;
  }
  return call->fts5_token(call->fts5_context, flags, token, bytes, start, end);
}

int CaptureTokenize(Fts5Tokenizer* tokenizer, void* context, int flags, const char* text, int bytes,
                    int (*token)(void*, int, const char*, int, int, int)) {
  auto* instance = reinterpret_cast<CaptureInstance*>(tokenizer);
  PostingsBuilder* builder = instance->module->builder;
  if ((flags & FTS5_TOKENIZE_DOCUMENT) == 0 || builder == nullptr || !builder->in_document()) {
    return instance->module->inner.xTokenize(instance->inner, context, flags, text, bytes, token);
  }
  CaptureCall call{context, token, builder};
  return instance->module->inner.xTokenize(instance->inner, &call, flags, text, bytes, CaptureToken);
}

void DestroyModule(void* context) { delete static_cast<CaptureModule*>(context); }

// The tokenizer name and its arguments, from the FTS5 `tokenize` option.
Result<std::vector<std::string>> TokenizerWords(const FtsParams& params) {
  VIGIL_ASSIGN_OR_RETURN(std::string option, TokenizerOption(params));
  std::istringstream in(option);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

int CollectToken(void* context, int /*flags*/, const char* token, int bytes, int /*start*/, int /*end*/) {
  static_cast<std::vector<std::string>*>(context)->emplace_back(token, static_cast<size_t>(bytes));
  return SQLITE_OK;
}

}  // namespace

Status CaptureDocumentTokens(sqlite3* db, const FtsParams& params, PostingsBuilder* builder) {
  VIGIL_ASSIGN_OR_RETURN(std::vector<std::string> words, TokenizerWords(params));
  VIGIL_ASSIGN_OR_RETURN(fts5_api * api, GetFts5Api(db));
  auto module = std::make_unique<CaptureModule>();
  module->builder = builder;
  int rc = api->xFindTokenizer(api, words[0].c_str(), &module->inner_context, &module->inner);
  if (rc != SQLITE_OK) return SqliteStatus(db, rc, "finding FTS5 tokenizer " + words[0]);
  // FTS5 resolves a name to its latest registration, so the table created next uses the wrapper.
  static fts5_tokenizer kWrapper = {CaptureCreate, CaptureDelete, CaptureTokenize};
  CaptureModule* raw = module.release();
  rc = api->xCreateTokenizer(api, words[0].c_str(), raw, &kWrapper, DestroyModule);
  if (rc != SQLITE_OK) {
    delete raw;
    return SqliteStatus(db, rc, "wrapping FTS5 tokenizer " + words[0]);
  }
  return Status::OK();
}

Result<std::unique_ptr<QueryTokenizer>> QueryTokenizer::Create(const FtsParams& params) {
  VIGIL_ASSIGN_OR_RETURN(std::vector<std::string> words, TokenizerWords(params));
  std::unique_ptr<QueryTokenizer> out(new QueryTokenizer());
  VIGIL_ASSIGN_OR_RETURN(out->db_, OpenConnection(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE));
  VIGIL_ASSIGN_OR_RETURN(fts5_api * api, GetFts5Api(out->db_.get()));
  void* context = nullptr;
  int rc = api->xFindTokenizer(api, words[0].c_str(), &context, &out->module_);
  if (rc != SQLITE_OK) return SqliteStatus(out->db_.get(), rc, "finding FTS5 tokenizer " + words[0]);
  std::vector<const char*> args;
  for (size_t i = 1; i < words.size(); ++i) args.push_back(words[i].c_str());
  MutexLock lock(&out->mu_);
  rc = out->module_.xCreate(context, args.data(), static_cast<int>(args.size()), &out->tokenizer_);
  if (rc != SQLITE_OK) return SqliteStatus(out->db_.get(), rc, "creating FTS5 tokenizer " + words[0]);
  return out;
}

QueryTokenizer::~QueryTokenizer() {
  MutexLock lock(&mu_);
  if (tokenizer_ != nullptr) module_.xDelete(tokenizer_);
}

Result<std::vector<std::string>> QueryTokenizer::Tokenize(std::string_view word) const {
  std::vector<std::string> tokens;
  MutexLock lock(&mu_);
  int rc = module_.xTokenize(tokenizer_, &tokens, FTS5_TOKENIZE_QUERY, word.data(), static_cast<int>(word.size()),
                             CollectToken);
  if (rc != SQLITE_OK) return SqliteStatus(nullptr, rc, "tokenizing a full-text query");
  return tokens;
}

}  // namespace vigil::index::fts_internal
