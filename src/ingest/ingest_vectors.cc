// Vector file readers. .fvecs: per record an int32 dim then dim float32, all
// little-endian, every record the same dim. .npy: format v1/v2/v3, dtype
// '<f4' or '<f2', C order, 2-D shape (rows, dim).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>

#include "ingest/ingest_internal.h"
#include "vigil/common/bounds.h"

namespace vigil::ingest {

namespace {

constexpr size_t kMaxNpyHeaderBytes = 1 << 20;
constexpr uint64_t kMaxChunkBytes = 16 << 20;  // one read per batch, whatever the dim

// Rows per batch: at most `batch_rows`, and at most kMaxChunkBytes of input (at least one row).
size_t RowsPerBatch(size_t batch_rows, uint64_t row_bytes) {
  return static_cast<size_t>(std::max<uint64_t>(1, std::min<uint64_t>(batch_rows, kMaxChunkBytes / row_bytes)));
}

uint32_t LoadU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

bool IsFiniteBits32(uint32_t bits) { return (bits & 0x7f800000u) != 0x7f800000u; }
bool IsFiniteBits16(uint16_t bits) { return (bits & 0x7c00u) != 0x7c00u; }

// Index of the first non-finite element of `n` float32 values, or n.
size_t FirstNonFinite32(const char* p, size_t n) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad |= !IsFiniteBits32(LoadU32(p + 4 * i));
  if (!bad) return n;
  for (size_t i = 0; i < n; ++i) {
    if (!IsFiniteBits32(LoadU32(p + 4 * i))) return i;
  }
  return n;
}

// Where decoded vectors go and how they are checked and converted.
class VectorSink {
 public:
  VectorSink(std::string file, VectorTarget target, VectorElement source)
      : file_(std::move(file)),
        target_(std::move(target)),
        source_(source),
        dest_(target_.schema->field(target_.vector_index).type.element),
        dim_(target_.schema->field(target_.vector_index).type.dim) {}

  const SchemaPtr& schema() const { return target_.schema; }

  // Appends one record whose `dim` elements start at `p`; `record` and `offset` locate it.
  Status Append(RecordBatch* batch, const char* p, uint64_t record, uint64_t offset) {
    Column& col = batch->columns[target_.vector_index];
    if (source_ == VectorElement::kFloat32) {
      size_t bad = FirstNonFinite32(p, dim_);
      if (bad != dim_) return ElementError(record, offset + 4 * bad, bad, "is not a finite number");
      if (dest_ == VectorElement::kFloat32) {
        col.AppendFixed(p, dim_ * 4);
      } else {
        VIGIL_RETURN_IF_ERROR(AppendAsHalf(&col, p, record, offset));
      }
    } else {
      VIGIL_RETURN_IF_ERROR(AppendFromHalf(&col, p, record, offset));
    }
    for (size_t f = 0; f < batch->columns.size(); ++f) {
      if (f == target_.vector_index) continue;
      if (static_cast<int>(f) == target_.id_index) {
        VIGIL_RETURN_IF_ERROR(AppendId(&batch->columns[f], record, offset));
      } else {
        batch->columns[f].AppendNull();
      }
    }
    ++batch->num_rows;
    return Status::OK();
  }

 private:
  Status ElementError(uint64_t record, uint64_t offset, size_t element, const std::string& what) {
    return RecordError(file_, record, offset, "vector element " + std::to_string(element) + " " + what);
  }

  Status AppendId(Column* col, uint64_t record, uint64_t offset) {
    if (record > static_cast<uint64_t>(INT64_MAX - target_.first_id)) {
      return RecordError(file_, record, offset, "id column: the id is past the largest BIGINT");
    }
    const int64_t id = target_.first_id + static_cast<int64_t>(record);
    if (col->type().id == TypeId::kInt64) {
      col->AppendInt64(id);
      return Status::OK();
    }
    Status st = AppendValue(col, target_.schema->field(target_.id_index), Value(id));
    return st.ok() ? st : RecordError(file_, record, offset, "id column: " + st.message());
  }

  Status AppendAsHalf(Column* col, const char* p, uint64_t record, uint64_t offset) {
    half_.resize(dim_);
    for (size_t i = 0; i < dim_; ++i) {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      if (std::fabs(f) > 65504.0f) return ElementError(record, offset + 4 * i, i, "is out of range for FLOAT16");
      half_[i] = FloatToHalf(f);
    }
    col->AppendFixed(half_.data(), dim_ * 2);
    return Status::OK();
  }

  Status AppendFromHalf(Column* col, const char* p, uint64_t record, uint64_t offset) {
    half_.resize(dim_);
    std::memcpy(half_.data(), p, dim_ * 2);
    for (size_t i = 0; i < dim_; ++i) {
      if (!IsFiniteBits16(half_[i])) return ElementError(record, offset + 2 * i, i, "is not a finite number");
    }
    if (dest_ == VectorElement::kFloat16) {
      col->AppendFixed(half_.data(), dim_ * 2);
      return Status::OK();
    }
    floats_.resize(dim_);
    for (size_t i = 0; i < dim_; ++i) floats_[i] = HalfToFloat(half_[i]);
    col->AppendFixed(floats_.data(), dim_ * 4);
    return Status::OK();
  }

  std::string file_;
  VectorTarget target_;
  VectorElement source_;
  VectorElement dest_;
  uint32_t dim_;
  std::vector<uint16_t> half_;
  std::vector<float> floats_;
};

RecordBatch NewBatch(const SchemaPtr& schema, size_t rows) {
  RecordBatch batch = RecordBatch::Empty(schema);
  for (auto& c : batch.columns) c.Reserve(rows);
  return batch;
}

class FvecsReader : public RecordBatchReader {
 public:
  FvecsReader(std::unique_ptr<ByteSource> src, uint32_t dim, VectorTarget target, size_t batch_rows)
      : src_(std::move(src)),
        dim_(dim),
        record_bytes_(4 + 4ull * dim),
        batch_rows_(RowsPerBatch(batch_rows, record_bytes_)),
        sink_(src_->name(), std::move(target), VectorElement::kFloat32) {}

  SchemaPtr schema() const override { return sink_.schema(); }

  Result<std::optional<RecordBatch>> Next() override {
    uint64_t offset = next_record_ * record_bytes_;
    uint64_t remaining = src_->size() - offset;
    if (remaining == 0) return std::optional<RecordBatch>();
    size_t n = static_cast<size_t>(std::min<uint64_t>(batch_rows_, remaining / record_bytes_));
    if (n == 0) {
      return RecordError(src_->name(), next_record_, offset,
                         "truncated record: " + std::to_string(remaining) + " bytes left, a record of dimension " +
                             std::to_string(dim_) + " needs " + std::to_string(record_bytes_));
    }
    VIGIL_RETURN_IF_ERROR(src_->ReadAt(offset, n * record_bytes_, &chunk_));
    RecordBatch batch = NewBatch(sink_.schema(), n);
    for (size_t i = 0; i < n; ++i) {
      const char* rec = chunk_.data() + i * record_bytes_;
      uint64_t rec_offset = offset + i * record_bytes_;
      int32_t d = static_cast<int32_t>(LoadU32(rec));
      if (d != static_cast<int32_t>(dim_)) {
        return RecordError(src_->name(), next_record_ + i, rec_offset,
                           "vector dimension " + std::to_string(d) + " differs from the file's " +
                               std::to_string(dim_) + " (record 0)");
      }
      VIGIL_RETURN_IF_ERROR(sink_.Append(&batch, rec + 4, next_record_ + i, rec_offset + 4));
    }
    next_record_ += n;
    return std::optional<RecordBatch>(std::move(batch));
  }

 private:
  std::unique_ptr<ByteSource> src_;
  uint32_t dim_;
  uint64_t record_bytes_;
  size_t batch_rows_;
  VectorSink sink_;
  uint64_t next_record_ = 0;
  std::string chunk_;
};

struct NpyHeader {
  VectorElement element = VectorElement::kFloat32;
  uint64_t rows = 0;
  uint32_t dim = 0;
  uint64_t data_offset = 0;
};

// A tiny parser for the Python dict literal of an .npy header.
class NpyDictParser {
 public:
  explicit NpyDictParser(std::string_view s) : s_(s) {}

  // Fills descr, fortran_order and shape; InvalidArgument (no location) on any defect.
  Status Parse(std::string* descr, bool* fortran, std::vector<uint64_t>* shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    if (!Eat('{')) return Bad("expected '{'");
    while (!Eat('}')) {
      std::string key;
      VIGIL_RETURN_IF_ERROR(String(&key));
      if (!Eat(':')) return Bad("expected ':' after key");
      if (key == "descr") {
        VIGIL_RETURN_IF_ERROR(String(descr));
        have_descr = true;
      } else if (key == "fortran_order") {
        VIGIL_RETURN_IF_ERROR(Bool(fortran));
        have_fortran = true;
      } else if (key == "shape") {
        VIGIL_RETURN_IF_ERROR(Tuple(shape));
        have_shape = true;
      } else {
        return Bad("unexpected key " + Excerpt(key));
      }
      if (!Eat(',') && !Peek('}')) return Bad("expected ',' or '}'");
    }
    Skip();
    if (p_ != s_.size()) return Bad("unexpected text after the header dict");
    if (!have_descr || !have_fortran || !have_shape) return Bad("descr, fortran_order and shape are required");
    return Status::OK();
  }

 private:
  Status Bad(const std::string& m) { return Status::InvalidArgument(m); }
  void Skip() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\n' || s_[p_] == '\t')) ++p_;
  }
  bool Peek(char c) {
    Skip();
    return p_ < s_.size() && s_[p_] == c;
  }
  bool Eat(char c) {
    if (!Peek(c)) return false;
    ++p_;
    return true;
  }
  Status String(std::string* out) {
    Skip();
    if (p_ >= s_.size() || (s_[p_] != '\'' && s_[p_] != '"')) return Bad("expected a quoted string");
    char q = s_[p_++];
    size_t end = s_.find(q, p_);
    if (end == std::string_view::npos || end - p_ > 64) return Bad("unterminated or overlong string");
    out->assign(s_.substr(p_, end - p_));
    p_ = end + 1;
    return Status::OK();
  }
  Status Bool(bool* out) {
    Skip();
    for (auto [word, v] : {std::pair{"True", true}, std::pair{"False", false}}) {
      size_t n = std::strlen(word);
      if (s_.substr(p_, n) == word) {
        p_ += n;
        *out = v;
        return Status::OK();
      }
    }
    return Bad("expected True or False");
  }
  Status Tuple(std::vector<uint64_t>* out) {
    if (!Eat('(')) return Bad("expected a shape tuple");
    while (!Eat(')')) {
      Skip();
      uint64_t v = 0;
      size_t start = p_;
      while (p_ < s_.size() && s_[p_] >= '0' && s_[p_] <= '9') {
        if (v > (std::numeric_limits<uint64_t>::max() - 9) / 10) return Bad("shape value too large");
        v = v * 10 + static_cast<uint64_t>(s_[p_++] - '0');
      }
      if (p_ == start) return Bad("expected a non-negative integer in shape");
      if (p_ < s_.size() && s_[p_] == 'L') ++p_;
      out->push_back(v);
      if (out->size() > 32) return Bad("too many dimensions");
      if (!Eat(',') && !Peek(')')) return Bad("expected ',' or ')' in shape");
    }
    return Status::OK();
  }

  std::string_view s_;
  size_t p_ = 0;
};

Result<NpyHeader> ParseNpyHeader(ByteSource* src) {
  const std::string& file = src->name();
  auto bad = [&](uint64_t offset, const std::string& m) {
    return Status::InvalidArgument(file + ": npy header (byte offset " + std::to_string(offset) + "): " + m);
  };
  std::string pre;
  VIGIL_RETURN_IF_ERROR(src->ReadAt(0, 12, &pre));
  if (pre.size() < 10 || pre.compare(0, 6, "\x93NUMPY") != 0) return bad(0, "not an .npy file (bad magic)");
  uint8_t major = static_cast<uint8_t>(pre[6]);
  if (major < 1 || major > 3) return bad(6, "unsupported .npy version " + std::to_string(major));
  uint64_t len_bytes = major == 1 ? 2 : 4;
  if (pre.size() < 8 + len_bytes) return bad(8, "truncated header");
  uint64_t header_len =
      major == 1 ? (static_cast<uint8_t>(pre[8]) | (static_cast<uint8_t>(pre[9]) << 8)) : LoadU32(pre.data() + 8);
  if (header_len > kMaxNpyHeaderBytes) return bad(8, "header length " + std::to_string(header_len) + " too large");
  uint64_t start = 8 + len_bytes;
  std::string text;
  VIGIL_RETURN_IF_ERROR(src->ReadAt(start, static_cast<size_t>(header_len), &text));
  if (text.size() != header_len) return bad(start, "truncated header");
  std::string descr;
  bool fortran = false;
  std::vector<uint64_t> shape;
  Status st = NpyDictParser(text).Parse(&descr, &fortran, &shape);
  if (!st.ok()) return bad(start, st.message());
  NpyHeader h;
  if (descr == "<f4") {
    h.element = VectorElement::kFloat32;
  } else if (descr == "<f2") {
    h.element = VectorElement::kFloat16;
  } else {
    return bad(start, "dtype " + Excerpt(descr) + " is not supported; expected '<f4' or '<f2' (little-endian float)");
  }
  if (fortran) return bad(start, "fortran_order is True; only C order is supported");
  if (shape.size() != 2) return bad(start, "shape must be 2-D (rows, dim), got " + std::to_string(shape.size()) + "-D");
  if (shape[1] == 0 || shape[1] > bounds::kMaxVectorDimension) {
    return bad(start, "dimension " + std::to_string(shape[1]) + " is out of range 1.." +
                          std::to_string(bounds::kMaxVectorDimension));
  }
  h.rows = shape[0];
  h.dim = static_cast<uint32_t>(shape[1]);
  h.data_offset = start + header_len;
  uint64_t row_bytes = static_cast<uint64_t>(h.dim) * (h.element == VectorElement::kFloat32 ? 4 : 2);
  if (h.rows > (std::numeric_limits<uint64_t>::max() - h.data_offset) / row_bytes) return bad(start, "shape too large");
  uint64_t expect = h.data_offset + h.rows * row_bytes;
  if (src->size() < expect) {
    uint64_t complete = (src->size() - std::min(src->size(), h.data_offset)) / row_bytes;
    return RecordError(
        file, complete, h.data_offset + complete * row_bytes,
        "truncated data: shape says " + std::to_string(h.rows) + " rows, the file holds " + std::to_string(complete));
  }
  if (src->size() > expect) {
    return RecordError(file, h.rows, expect, std::to_string(src->size() - expect) + " unexpected bytes after the data");
  }
  return h;
}

class NpyReader : public RecordBatchReader {
 public:
  NpyReader(std::unique_ptr<ByteSource> src, NpyHeader h, VectorTarget target, size_t batch_rows)
      : src_(std::move(src)),
        h_(h),
        row_bytes_(static_cast<uint64_t>(h.dim) * (h.element == VectorElement::kFloat32 ? 4 : 2)),
        batch_rows_(RowsPerBatch(batch_rows, row_bytes_)),
        sink_(src_->name(), std::move(target), h.element) {}

  SchemaPtr schema() const override { return sink_.schema(); }

  Result<std::optional<RecordBatch>> Next() override {
    if (next_row_ >= h_.rows) return std::optional<RecordBatch>();
    size_t n = static_cast<size_t>(std::min<uint64_t>(batch_rows_, h_.rows - next_row_));
    uint64_t offset = h_.data_offset + next_row_ * row_bytes_;
    VIGIL_RETURN_IF_ERROR(src_->ReadAt(offset, n * row_bytes_, &chunk_));
    if (chunk_.size() != n * row_bytes_) return RecordError(src_->name(), next_row_, offset, "short read");
    RecordBatch batch = NewBatch(sink_.schema(), n);
    for (size_t i = 0; i < n; ++i) {
      VIGIL_RETURN_IF_ERROR(
          sink_.Append(&batch, chunk_.data() + i * row_bytes_, next_row_ + i, offset + i * row_bytes_));
    }
    next_row_ += n;
    return std::optional<RecordBatch>(std::move(batch));
  }

 private:
  std::unique_ptr<ByteSource> src_;
  NpyHeader h_;
  uint64_t row_bytes_;
  size_t batch_rows_;
  VectorSink sink_;
  uint64_t next_row_ = 0;
  std::string chunk_;
};

}  // namespace

Result<std::unique_ptr<RecordBatchReader>> OpenFvecs(std::unique_ptr<ByteSource> src, const IngestOptions& options) {
  std::string head;
  VIGIL_RETURN_IF_ERROR(src->ReadAt(0, 4, &head));
  if (head.size() < 4) return RecordError(src->name(), 0, 0, "file is too short for an .fvecs record");
  int32_t dim = static_cast<int32_t>(LoadU32(head.data()));
  if (dim <= 0 || static_cast<uint32_t>(dim) > bounds::kMaxVectorDimension) {
    return RecordError(src->name(), 0, 0,
                       "vector dimension " + std::to_string(dim) + " is out of range 1.." +
                           std::to_string(bounds::kMaxVectorDimension));
  }
  VIGIL_ASSIGN_OR_RETURN(VectorTarget target, ResolveVectorTarget(src->name(), static_cast<uint32_t>(dim), options));
  return std::unique_ptr<RecordBatchReader>(
      new FvecsReader(std::move(src), static_cast<uint32_t>(dim), std::move(target), options.batch_rows));
}

Result<std::unique_ptr<RecordBatchReader>> OpenNpy(std::unique_ptr<ByteSource> src, const IngestOptions& options) {
  VIGIL_ASSIGN_OR_RETURN(NpyHeader h, ParseNpyHeader(src.get()));
  VIGIL_ASSIGN_OR_RETURN(VectorTarget target, ResolveVectorTarget(src->name(), h.dim, options));
  return std::unique_ptr<RecordBatchReader>(new NpyReader(std::move(src), h, std::move(target), options.batch_rows));
}

}  // namespace vigil::ingest
