#include "vigil/storage/column.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <limits>

namespace vigil {

namespace {

std::string TypeMismatch(const DataType& t, const char* got) {
  return "expected a " + t.ToString() + " value, got " + got;
}

Status CheckIntRange(int64_t v, const DataType& t) {
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  switch (t.id) {
    case TypeId::kInt8:
      lo = INT8_MIN;
      hi = INT8_MAX;
      break;
    case TypeId::kInt16:
      lo = INT16_MIN;
      hi = INT16_MAX;
      break;
    case TypeId::kInt32:
    case TypeId::kDate:
      lo = INT32_MIN;
      hi = INT32_MAX;
      break;
    case TypeId::kDecimal: {
      int64_t p10 = 1;
      for (int i = 0; i < t.precision; ++i) p10 *= 10;
      lo = -(p10 - 1);
      hi = p10 - 1;
      break;
    }
    default:
      break;
  }
  if (v < lo || v > hi) {
    return Status::InvalidArgument("value " + std::to_string(v) + " is out of range for " + t.ToString());
  }
  return Status::OK();
}

std::string FormatDate(int64_t days) {
  time_t secs = static_cast<time_t>(days) * 86400;
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
  return buf;
}

std::string FormatTimestamp(int64_t micros) {
  int64_t secs = micros >= 0 ? micros / 1000000 : -((-micros + 999999) / 1000000);
  int64_t frac = micros - secs * 1000000;
  time_t t = static_cast<time_t>(secs);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d %02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec);
  std::string s = buf;
  if (frac != 0) {
    std::snprintf(buf, sizeof buf, ".%06lld", static_cast<long long>(frac));
    s += buf;
  }
  return s;
}

std::string FormatDecimal(int64_t v, int scale) {
  bool neg = v < 0;
  uint64_t magnitude = neg ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
  std::string digits = std::to_string(magnitude);
  if (scale > 0) {
    while (static_cast<int>(digits.size()) <= scale) digits.insert(digits.begin(), '0');
    digits.insert(digits.end() - scale, '.');
  }
  return neg ? "-" + digits : digits;
}

}  // namespace

std::string ValueToString(const Value& v, const DataType& type) {
  if (IsNull(v)) return "NULL";
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto* i = std::get_if<int64_t>(&v)) {
    switch (type.id) {
      case TypeId::kDate:
        return FormatDate(*i);
      case TypeId::kTimestamp:
        return FormatTimestamp(*i);
      case TypeId::kDecimal:
        return FormatDecimal(*i, type.scale);
      default:
        return std::to_string(*i);
    }
  }
  if (auto* d = std::get_if<double>(&v)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", type.id == TypeId::kFloat32 ? 7 : 15, *d);
    return buf;
  }
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  const auto& vec = std::get<std::vector<float>>(v);
  std::string s = "[";
  for (size_t i = 0; i < vec.size(); ++i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%.6g", i ? ", " : "", vec[i]);
    s += buf;
  }
  return s + "]";
}

Value Column::ValueAt(size_t row) const {
  if (!IsValid(row)) return std::monostate{};
  const uint8_t* p = data() + row * type_.FixedWidth();
  switch (type_.id) {
    case TypeId::kBool:
      return *p != 0;
    case TypeId::kInt8:
      return static_cast<int64_t>(*reinterpret_cast<const int8_t*>(p));
    case TypeId::kInt16: {
      int16_t x;
      std::memcpy(&x, p, 2);
      return static_cast<int64_t>(x);
    }
    case TypeId::kInt32:
    case TypeId::kDate: {
      int32_t x;
      std::memcpy(&x, p, 4);
      return static_cast<int64_t>(x);
    }
    case TypeId::kInt64:
    case TypeId::kTimestamp:
    case TypeId::kDecimal: {
      int64_t x;
      std::memcpy(&x, p, 8);
      return x;
    }
    case TypeId::kFloat32: {
      float x;
      std::memcpy(&x, p, 4);
      return static_cast<double>(x);
    }
    case TypeId::kFloat64: {
      double x;
      std::memcpy(&x, p, 8);
      return x;
    }
    case TypeId::kString:
      return std::string(StringAt(row));
    case TypeId::kVector: {
      std::vector<float> out(type_.dim);
      if (type_.element == VectorElement::kFloat32) {
        std::memcpy(out.data(), p, type_.dim * 4);
      } else {
        for (uint32_t i = 0; i < type_.dim; ++i) {
          uint16_t h;
          std::memcpy(&h, p + 2 * i, 2);
          out[i] = HalfToFloat(h);
        }
      }
      return out;
    }
  }
  return std::monostate{};
}

void Column::MarkValid() {
  if (!validity_.empty()) validity_.push_back(1);
}

void Column::AppendNull() {
  if (validity_.empty()) validity_.assign(size_, 1);
  validity_.push_back(0);
  if (type_.id == TypeId::kString) {
    if (offsets_.empty()) offsets_.push_back(0);
    offsets_.push_back(data_.size());
  } else {
    data_.append(type_.FixedWidth(), '\0');
  }
  ++size_;
}

void Column::AppendInt64(int64_t v) {
  switch (type_.FixedWidth()) {
    case 1: {
      int8_t x = static_cast<int8_t>(v);
      data_.append(reinterpret_cast<const char*>(&x), 1);
      break;
    }
    case 2: {
      int16_t x = static_cast<int16_t>(v);
      data_.append(reinterpret_cast<const char*>(&x), 2);
      break;
    }
    case 4: {
      int32_t x = static_cast<int32_t>(v);
      data_.append(reinterpret_cast<const char*>(&x), 4);
      break;
    }
    default:
      data_.append(reinterpret_cast<const char*>(&v), 8);
  }
  MarkValid();
  ++size_;
}

void Column::AppendDouble(double v) {
  if (type_.id == TypeId::kFloat32) {
    float f = static_cast<float>(v);
    data_.append(reinterpret_cast<const char*>(&f), 4);
  } else {
    data_.append(reinterpret_cast<const char*>(&v), 8);
  }
  MarkValid();
  ++size_;
}

void Column::AppendBool(bool v) {
  data_.push_back(v ? 1 : 0);
  MarkValid();
  ++size_;
}

void Column::AppendString(std::string_view s) {
  if (offsets_.empty()) offsets_.push_back(0);
  data_.append(s);
  offsets_.push_back(data_.size());
  MarkValid();
  ++size_;
}

void Column::AppendFixed(const void* bytes, size_t n) {
  data_.append(static_cast<const char*>(bytes), n);
  MarkValid();
  ++size_;
}

Status Column::Append(const Value& v) {
  if (IsNull(v)) {
    AppendNull();
    return Status::OK();
  }
  switch (type_.id) {
    case TypeId::kBool:
      if (auto* b = std::get_if<bool>(&v)) {
        AppendBool(*b);
        return Status::OK();
      }
      return Status::InvalidArgument(TypeMismatch(type_, "a non-boolean"));
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kDate:
    case TypeId::kTimestamp:
    case TypeId::kDecimal:
      if (auto* i = std::get_if<int64_t>(&v)) {
        VIGIL_RETURN_IF_ERROR(CheckIntRange(*i, type_));
        AppendInt64(*i);
        return Status::OK();
      }
      return Status::InvalidArgument(TypeMismatch(type_, "a non-integer"));
    case TypeId::kFloat32:
    case TypeId::kFloat64: {
      double d;
      if (auto* x = std::get_if<double>(&v)) {
        d = *x;
      } else if (auto* i = std::get_if<int64_t>(&v)) {
        d = static_cast<double>(*i);
      } else {
        return Status::InvalidArgument(TypeMismatch(type_, "a non-number"));
      }
      if (type_.id == TypeId::kFloat32 && std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max()) {
        return Status::InvalidArgument("value " + std::to_string(d) + " is out of range for FLOAT");
      }
      AppendDouble(d);
      return Status::OK();
    }
    case TypeId::kString:
      if (auto* s = std::get_if<std::string>(&v)) {
        VIGIL_RETURN_IF_ERROR(type_.CheckLength(*s));
        AppendString(*s);
        return Status::OK();
      }
      return Status::InvalidArgument(TypeMismatch(type_, "a non-string"));
    case TypeId::kVector: {
      auto* vec = std::get_if<std::vector<float>>(&v);
      if (vec == nullptr) return Status::InvalidArgument(TypeMismatch(type_, "a non-vector"));
      if (vec->size() != type_.dim) {
        return Status::InvalidArgument("vector has dimension " + std::to_string(vec->size()) + ", expected " +
                                       std::to_string(type_.dim));
      }
      if (type_.element == VectorElement::kFloat32) {
        AppendFixed(vec->data(), vec->size() * 4);
      } else {
        std::string buf(vec->size() * 2, '\0');
        for (size_t i = 0; i < vec->size(); ++i) {
          uint16_t h = FloatToHalf((*vec)[i]);
          std::memcpy(&buf[2 * i], &h, 2);
        }
        AppendFixed(buf.data(), buf.size());
      }
      return Status::OK();
    }
  }
  return Status::Internal("unhandled type");
}

void Column::AppendRange(const Column& other, size_t begin, size_t end) {
  VIGIL_CHECK(other.type_ == type_ && begin <= end && end <= other.size_);
  if (end == begin) return;
  if (other.has_nulls() || has_nulls()) {
    if (validity_.empty()) validity_.assign(size_, 1);
    for (size_t r = begin; r < end; ++r) validity_.push_back(other.IsValid(r) ? 1 : 0);
  }
  if (type_.id == TypeId::kString) {
    if (offsets_.empty()) offsets_.push_back(0);
    uint64_t base = other.offsets_[begin];
    data_.append(other.data_, base, other.offsets_[end] - base);
    uint64_t shift = offsets_.back();
    for (size_t r = begin + 1; r <= end; ++r) offsets_.push_back(other.offsets_[r] - base + shift);
  } else {
    size_t w = type_.FixedWidth();
    data_.append(other.data_, begin * w, (end - begin) * w);
  }
  size_ += end - begin;
}

Column Column::Filter(const std::vector<uint8_t>& keep) const {
  VIGIL_CHECK(keep.size() == size_);
  Column out(type_);
  size_t r = 0;
  while (r < size_) {
    if (!keep[r]) {
      ++r;
      continue;
    }
    size_t run = r;
    while (run < size_ && keep[run]) ++run;
    out.AppendRange(*this, r, run);
    r = run;
  }
  return out;
}

void Column::Reserve(size_t rows) {
  if (type_.id == TypeId::kString) {
    offsets_.reserve(rows + 1);
  } else {
    data_.reserve(rows * type_.FixedWidth());
  }
}

size_t Column::MemoryBytes() const {
  return data_.capacity() + offsets_.capacity() * sizeof(uint64_t) + validity_.capacity() + sizeof(*this);
}

Status Column::SetSizeFromBuffers(size_t rows) {
  if (!validity_.empty() && validity_.size() != rows) {
    return Status::Corruption("validity has " + std::to_string(validity_.size()) + " entries for " +
                              std::to_string(rows) + " rows");
  }
  if (type_.id == TypeId::kString) {
    if (rows == 0 && offsets_.empty()) {
      size_ = 0;
      return Status::OK();
    }
    if (offsets_.size() != rows + 1 || offsets_[0] != 0 || offsets_.back() != data_.size()) {
      return Status::Corruption("string offsets do not match the data");
    }
    for (size_t i = 1; i < offsets_.size(); ++i) {
      if (offsets_[i] < offsets_[i - 1]) return Status::Corruption("string offsets are not monotonic");
    }
  } else if (data_.size() != rows * type_.FixedWidth()) {
    return Status::Corruption("column data has " + std::to_string(data_.size()) + " bytes for " + std::to_string(rows) +
                              " rows of " + type_.ToString());
  }
  size_ = rows;
  return Status::OK();
}

RecordBatch RecordBatch::Empty(SchemaPtr schema) {
  RecordBatch b;
  for (const auto& f : schema->fields()) b.columns.emplace_back(f.type);
  b.schema = std::move(schema);
  return b;
}

Status RecordBatch::Validate() const {
  if (!schema || columns.size() != schema->num_fields()) {
    return Status::InvalidArgument("batch has " + std::to_string(columns.size()) + " columns, schema has " +
                                   std::to_string(schema ? schema->num_fields() : 0));
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    const Field& f = schema->field(i);
    if (!(columns[i].type() == f.type)) {
      return Status::InvalidArgument("column '" + f.name + "' holds " + columns[i].type().ToString() +
                                     ", schema says " + f.type.ToString());
    }
    if (columns[i].size() != num_rows) {
      return Status::InvalidArgument("column '" + f.name + "' has " + std::to_string(columns[i].size()) +
                                     " rows, batch has " + std::to_string(num_rows));
    }
    if (!f.nullable && columns[i].has_nulls()) {
      for (size_t r = 0; r < num_rows; ++r) {
        if (!columns[i].IsValid(r)) {
          return Status::InvalidArgument("column '" + f.name + "' is NOT NULL but row " + std::to_string(r) +
                                         " of the batch is NULL");
        }
      }
    }
  }
  return Status::OK();
}

Status RecordBatch::AppendRow(const std::vector<Value>& row) {
  if (row.size() != columns.size()) {
    return Status::InvalidArgument("row has " + std::to_string(row.size()) + " values, expected " +
                                   std::to_string(columns.size()));
  }
  for (size_t i = 0; i < row.size(); ++i) {
    const Field& f = schema->field(i);
    Status st =
        IsNull(row[i]) && !f.nullable ? Status::InvalidArgument("column '" + f.name + "' is NOT NULL") : Status::OK();
    if (st.ok()) st = columns[i].Append(row[i]);
    if (!st.ok()) {
      // Roll back the columns already extended so the batch stays rectangular.
      for (size_t j = 0; j < i; ++j) {
        Column c(columns[j].type());
        c.AppendRange(columns[j], 0, num_rows);
        columns[j] = std::move(c);
      }
      return st.WithContext("column '" + f.name + "'");
    }
  }
  ++num_rows;
  return Status::OK();
}

namespace {
class VectorBatchReader : public RecordBatchReader {
 public:
  VectorBatchReader(SchemaPtr schema, std::vector<RecordBatch> batches)
      : schema_(std::move(schema)), batches_(std::move(batches)) {}
  SchemaPtr schema() const override { return schema_; }
  Result<std::optional<RecordBatch>> Next() override {
    if (next_ >= batches_.size()) return std::optional<RecordBatch>();
    return std::optional<RecordBatch>(std::move(batches_[next_++]));
  }

 private:
  SchemaPtr schema_;
  std::vector<RecordBatch> batches_;
  size_t next_ = 0;
};
}  // namespace

std::unique_ptr<RecordBatchReader> MakeBatchReader(SchemaPtr schema, std::vector<RecordBatch> batches) {
  return std::make_unique<VectorBatchReader>(std::move(schema), std::move(batches));
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal
      exp = 127 - 15 + 1;
      while ((mant & 0x400) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3FF;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000 | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xFF) - 127 + 15;
  uint32_t mant = x & 0x7FFFFF;
  if (((x >> 23) & 0xFF) == 0xFF) return static_cast<uint16_t>(sign | 0x7C00 | (mant ? 0x200 : 0));
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7C00);
  if (exp <= 0) {
    if (exp < -10) return sign;
    mant |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;  // may carry into the exponent: correct
  return static_cast<uint16_t>(sign | half);
}

}  // namespace vigil
