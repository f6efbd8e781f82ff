#include "vigil/ingest/datagen.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <set>

#include "vigil/common/bounds.h"

namespace vigil {

namespace {

constexpr uint32_t kMaxLatentDim = 256;

// Independent random streams per row; any row can be generated on its own.
enum Stream : uint64_t { kMixStream = 1, kCenterStream, kCategoryStream, kTsStream, kBodyStream, kEmbStream };

uint64_t Mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// SplitMix64 keyed by (seed, stream, row): a counter-based generator.
class RowRng {
 public:
  RowRng(uint64_t seed, uint64_t stream, uint64_t row)
      : state_(Mix64(seed ^ Mix64(stream * 0x9E3779B97F4A7C15ULL ^ Mix64(row + 0x632BE59BD9B4E019ULL)))) {}
  uint64_t Next() {
    state_ += 0x9E3779B97F4A7C15ULL;
    return Mix64(state_);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double Gaussian() {
    double u1 = 1.0 - Uniform();  // (0, 1]
    double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

std::vector<double> ZipfCdf(uint32_t n, double s) {
  std::vector<double> cdf(n);
  double sum = 0;
  for (uint32_t i = 0; i < n; ++i) cdf[i] = (sum += 1.0 / std::pow(i + 1.0, s));
  for (auto& c : cdf) c /= sum;
  cdf.back() = 1.0;
  return cdf;
}

uint32_t SampleCdf(const std::vector<double>& cdf, double u) {
  return static_cast<uint32_t>(std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
}

// A pronounceable, unique word for vocabulary rank `w` (frequent words are short).
std::string MakeWord(uint32_t w) {
  static const char* kSyllables[] = {"ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "vu", "ze",
                                     "ba", "do", "fi", "gu", "he", "ja", "ko", "li", "mo", "ne"};
  std::string out;
  uint32_t v = w + 1;
  while (v > 0) {
    out += kSyllables[v % 20];
    v /= 20;
  }
  return out;
}

const std::set<std::string>& KnownColumns() {
  static const auto* k = new std::set<std::string>{"id", "category", "ts", "body", "emb"};
  return *k;
}

Result<SchemaPtr> MakeSchema(const DatagenOptions& o) {
  std::vector<Field> fields;
  for (const auto& name : o.columns) {
    DataType t = DataType::Of(TypeId::kInt64);
    if (name == "category" || name == "body") t = DataType::Of(TypeId::kString);
    if (name == "ts") t = DataType::Of(TypeId::kTimestamp);
    if (name == "emb") t = DataType::Vector(VectorElement::kFloat32, o.dim);
    fields.push_back(Field{-1, name, t, false});
  }
  return Schema::Make(std::move(fields));
}

Status ValidateOptions(DatagenOptions* o) {
  if (o->columns.empty()) o->columns = {"id", "category", "ts", "body", "emb"};
  std::set<std::string> seen;
  for (const auto& c : o->columns) {
    if (!KnownColumns().count(c)) {
      return Status::InvalidArgument("datagen: unknown column '" + c + "' (expected id, category, ts, body, emb)");
    }
    if (!seen.insert(c).second) return Status::InvalidArgument("datagen: column '" + c + "' listed twice");
  }
  if (o->dim == 0 || o->dim > bounds::kMaxVectorDimension) return Status::InvalidArgument("datagen: bad dim");
  if (o->latent_dim == 0 || o->latent_dim > o->dim || o->latent_dim > kMaxLatentDim) {
    return Status::InvalidArgument("datagen: latent_dim must be in 1..min(dim, 256)");
  }
  if (o->num_categories == 0 || o->vocabulary == 0 || o->batch_rows == 0) {
    return Status::InvalidArgument("datagen: num_categories, vocabulary and batch_rows must be positive");
  }
  return Status::OK();
}

// Formats microseconds since the epoch as "YYYY-MM-DDTHH:MM:SS.ffffffZ".
std::string IsoTimestamp(int64_t micros) {
  int64_t days = micros >= 0 ? micros / 86400000000LL : -((-micros + 86399999999LL) / 86400000000LL);
  int64_t rem = micros - days * 86400000000LL;
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int64_t d = doy - (153 * mp + 2) / 5 + 1;
  int64_t m = mp < 10 ? mp + 3 : mp - 9;
  int64_t y = yoe + era * 400 + (m <= 2);
  int64_t secs = rem / 1000000;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%06lldZ", static_cast<long long>(y),
                static_cast<long long>(m), static_cast<long long>(d), static_cast<long long>(secs / 3600),
                static_cast<long long>(secs / 60 % 60), static_cast<long long>(secs % 60),
                static_cast<long long>(rem % 1000000));
  return buf;
}

void AppendFloat(std::string* out, float f) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), f);
  out->append(buf, end);
}

// Generated text never holds quotes or backslashes, so no escaping is needed.
void AppendQuoted(std::string* out, const std::string& s) {
  out->push_back('"');
  out->append(s);
  out->push_back('"');
}

void AppendVectorJson(std::string* out, const float* v, uint32_t dim) {
  out->push_back('[');
  for (uint32_t i = 0; i < dim; ++i) {
    if (i) out->push_back(',');
    AppendFloat(out, v[i]);
  }
  out->push_back(']');
}

class GeneratorReader : public RecordBatchReader {
 public:
  explicit GeneratorReader(std::shared_ptr<const DataGenerator> gen) : gen_(std::move(gen)) {}
  SchemaPtr schema() const override { return gen_->schema(); }
  Result<std::optional<RecordBatch>> Next() override {
    uint64_t rows = gen_->options().rows;
    if (next_ >= rows) return std::optional<RecordBatch>();
    size_t n = static_cast<size_t>(std::min<uint64_t>(gen_->options().batch_rows, rows - next_));
    RecordBatch b = gen_->Batch(next_, n);
    next_ += n;
    return std::optional<RecordBatch>(std::move(b));
  }

 private:
  std::shared_ptr<const DataGenerator> gen_;
  uint64_t next_ = 0;
};

FileSystem* Fs(FileSystem* fs) { return fs ? fs : DefaultFileSystem(); }

// Streams generated rows through `encode` (row -> bytes appended to a buffer) into a new file.
template <typename Encode>
Status WriteRows(const DataGenerator& gen, const std::string& path, FileSystem* fs, std::string header, Encode encode) {
  VIGIL_ASSIGN_OR_RETURN(auto file, Fs(fs)->NewWritableFile(path));
  std::string buf = std::move(header);
  for (uint64_t row = 0; row < gen.options().rows; ++row) {
    encode(row, &buf);
    if (buf.size() >= (4u << 20)) {
      VIGIL_RETURN_IF_ERROR(file->Append(buf));
      buf.clear();
    }
  }
  VIGIL_RETURN_IF_ERROR(file->Append(buf));
  VIGIL_RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

}  // namespace

Result<std::shared_ptr<const DataGenerator>> DataGenerator::Make(DatagenOptions options) {
  VIGIL_RETURN_IF_ERROR(ValidateOptions(&options));
  std::shared_ptr<DataGenerator> g(new DataGenerator());
  g->options_ = options;
  VIGIL_ASSIGN_OR_RETURN(g->schema_, MakeSchema(options));
  const uint32_t d = options.dim, k = options.latent_dim;
  RowRng mix(options.seed, kMixStream, 0);
  g->mixing_.resize(static_cast<size_t>(d) * k);
  for (auto& w : g->mixing_) w = static_cast<float>(mix.Gaussian() / std::sqrt(static_cast<double>(k)));
  RowRng centers(options.seed, kCenterStream, 0);
  g->centers_.resize(static_cast<size_t>(options.num_categories) * k);
  for (auto& c : g->centers_) c = static_cast<float>(centers.Gaussian());
  g->category_cdf_ = ZipfCdf(options.num_categories, 1.1);
  g->word_cdf_ = ZipfCdf(options.vocabulary, 1.0);
  g->words_.reserve(options.vocabulary);
  for (uint32_t w = 0; w < options.vocabulary; ++w) g->words_.push_back(MakeWord(w));
  return std::shared_ptr<const DataGenerator>(std::move(g));
}

std::string DataGenerator::CategoryName(uint32_t c) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "cat_%03u", c);
  return buf;
}

uint32_t DataGenerator::CategoryIndex(uint64_t row) const {
  RowRng r(options_.seed, kCategoryStream, row);
  return SampleCdf(category_cdf_, r.Uniform());
}

std::string DataGenerator::Category(uint64_t row) const { return CategoryName(CategoryIndex(row)); }

int64_t DataGenerator::Timestamp(uint64_t row) const {
  RowRng r(options_.seed, kTsStream, row);
  return options_.start_micros + static_cast<int64_t>(row) * 1000000 + static_cast<int64_t>(r.Next() % 1000000);
}

std::string DataGenerator::Body(uint64_t row) const {
  RowRng r(options_.seed, kBodyStream, row);
  uint32_t n = std::max<uint32_t>(1, static_cast<uint32_t>(options_.words_per_body * (0.8 + 0.4 * r.Uniform())));
  std::string out;
  out.reserve(n * 7);
  for (uint32_t i = 0; i < n; ++i) {
    if (i) out.push_back(' ');
    out += words_[SampleCdf(word_cdf_, r.Uniform())];
  }
  return out;
}

void DataGenerator::Embedding(uint64_t row, float* out) const {
  const uint32_t d = options_.dim, k = options_.latent_dim;
  RowRng r(options_.seed, kEmbStream, row);
  float z[kMaxLatentDim];
  const float* center = &centers_[static_cast<size_t>(CategoryIndex(row)) * k];
  for (uint32_t j = 0; j < k; ++j) z[j] = center[j] + 0.7f * static_cast<float>(r.Gaussian());
  const float noise = options_.noise * 1.7320508f;  // uniform noise with std `noise`
  for (uint32_t i = 0; i < d; ++i) {
    const float* w = &mixing_[static_cast<size_t>(i) * k];
    float acc = 0;
    for (uint32_t j = 0; j < k; ++j) acc += w[j] * z[j];
    out[i] = acc + noise * static_cast<float>(2.0 * r.Uniform() - 1.0);
  }
}

RecordBatch DataGenerator::Batch(uint64_t first, size_t n) const {
  RecordBatch b = RecordBatch::Empty(schema_);
  std::vector<float> emb(options_.dim);
  for (size_t c = 0; c < options_.columns.size(); ++c) {
    Column& col = b.columns[c];
    const std::string& name = options_.columns[c];
    col.Reserve(n);
    for (uint64_t row = first; row < first + n; ++row) {
      if (name == "id") {
        col.AppendInt64(static_cast<int64_t>(row));
      } else if (name == "category") {
        col.AppendString(Category(row));
      } else if (name == "ts") {
        col.AppendInt64(Timestamp(row));
      } else if (name == "body") {
        col.AppendString(Body(row));
      } else {
        Embedding(row, emb.data());
        col.AppendFixed(emb.data(), emb.size() * sizeof(float));
      }
    }
  }
  b.num_rows = n;
  return b;
}

std::unique_ptr<RecordBatchReader> DataGenerator::NewReader() const {
  return std::make_unique<GeneratorReader>(shared_from_this());
}

Status WriteFvecs(const DataGenerator& gen, const std::string& path, FileSystem* fs) {
  const uint32_t dim = gen.options().dim;
  std::vector<float> emb(dim);
  return WriteRows(gen, path, fs, "", [&](uint64_t row, std::string* buf) {
    int32_t d = static_cast<int32_t>(dim);
    buf->append(reinterpret_cast<const char*>(&d), 4);
    gen.Embedding(row, emb.data());
    buf->append(reinterpret_cast<const char*>(emb.data()), dim * sizeof(float));
  });
}

Status WriteNpy(const DataGenerator& gen, const std::string& path, VectorElement element, FileSystem* fs) {
  const uint32_t dim = gen.options().dim;
  std::string dict = std::string("{'descr': '") + (element == VectorElement::kFloat32 ? "<f4" : "<f2") +
                     "', 'fortran_order': False, 'shape': (" + std::to_string(gen.options().rows) + ", " +
                     std::to_string(dim) + "), }";
  size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict.push_back('\n');
  std::string header = "\x93NUMPY";
  header += '\x01';
  header += '\x00';
  header.push_back(static_cast<char>(dict.size() & 0xff));
  header.push_back(static_cast<char>(dict.size() >> 8));
  header += dict;
  std::vector<float> emb(dim);
  std::vector<uint16_t> half(dim);
  return WriteRows(gen, path, fs, header, [&](uint64_t row, std::string* buf) {
    gen.Embedding(row, emb.data());
    if (element == VectorElement::kFloat32) {
      buf->append(reinterpret_cast<const char*>(emb.data()), dim * sizeof(float));
      return;
    }
    for (uint32_t i = 0; i < dim; ++i) half[i] = FloatToHalf(emb[i]);
    buf->append(reinterpret_cast<const char*>(half.data()), dim * sizeof(uint16_t));
  });
}

Status WriteJsonl(const DataGenerator& gen, const std::string& path, FileSystem* fs) {
  const DatagenOptions& o = gen.options();
  std::vector<float> emb(o.dim);
  return WriteRows(gen, path, fs, "", [&](uint64_t row, std::string* buf) {
    char sep = '{';
    for (const auto& c : o.columns) {
      buf->push_back(sep);
      sep = ',';
      AppendQuoted(buf, c);
      buf->push_back(':');
      if (c == "id") *buf += std::to_string(row);
      if (c == "category") AppendQuoted(buf, gen.Category(row));
      if (c == "ts") AppendQuoted(buf, IsoTimestamp(gen.Timestamp(row)));
      if (c == "body") AppendQuoted(buf, gen.Body(row));
      if (c == "emb") {
        gen.Embedding(row, emb.data());
        AppendVectorJson(buf, emb.data(), o.dim);
      }
    }
    *buf += "}\n";
  });
}

Status WriteCsv(const DataGenerator& gen, const std::string& path, FileSystem* fs) {
  const DatagenOptions& o = gen.options();
  std::string header;
  for (const auto& c : o.columns) header += (header.empty() ? "" : ",") + c;
  header += "\n";
  std::vector<float> emb(o.dim);
  return WriteRows(gen, path, fs, header, [&](uint64_t row, std::string* buf) {
    bool first = true;
    for (const auto& c : o.columns) {
      if (!first) buf->push_back(',');
      first = false;
      if (c == "id") *buf += std::to_string(row);
      if (c == "category") *buf += gen.Category(row);
      if (c == "ts") *buf += IsoTimestamp(gen.Timestamp(row));
      if (c == "body") AppendQuoted(buf, gen.Body(row));
      if (c == "emb") {
        gen.Embedding(row, emb.data());
        buf->push_back('"');
        AppendVectorJson(buf, emb.data(), o.dim);
        buf->push_back('"');
      }
    }
    buf->push_back('\n');
  });
}

}  // namespace vigil
