// Typed parsing of text cells and JSON values against a schema type, with the
// range checks of each type, and the type-inference lattice for samples.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "ingest/ingest_internal.h"
#include "vigil/common/ascii.h"
#include "vigil/common/bounds.h"
#include "vigil/common/names.h"
#include "vigil/storage/temporal.h"

namespace vigil {

namespace {

constexpr double kMaxHalf = 65504.0;

std::string Quote(std::string_view text) { return Excerpt(text); }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool ParseInt(std::string_view s, int64_t* out) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
}

// A finite number (no "nan"/"inf"); out_of_range set when it overflows.
bool ParseDouble(std::string_view s, double* out, bool* out_of_range) {
  *out_of_range = false;
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (ptr != s.data() + s.size()) return false;
  if (ec == std::errc::result_out_of_range) {
    *out_of_range = true;
    return true;
  }
  return ec == std::errc() && std::isfinite(*out);
}

Status IntRange(int64_t v, const DataType& type) {
  int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  switch (type.id) {
    case TypeId::kInt8:
      lo = INT8_MIN;
      hi = INT8_MAX;
      break;
    case TypeId::kInt16:
      lo = INT16_MIN;
      hi = INT16_MAX;
      break;
    case TypeId::kInt32:
      lo = INT32_MIN;
      hi = INT32_MAX;
      break;
    default:
      break;
  }
  if (v < lo || v > hi) {
    return Status::InvalidArgument("value " + std::to_string(v) + " is out of range for " + type.ToString());
  }
  return Status::OK();
}

Status FloatRange(double v, const DataType& type) {
  if (!std::isfinite(v)) return Status::InvalidArgument("value is not a finite number");
  if (type.id == TypeId::kFloat32 && std::fabs(v) > std::numeric_limits<float>::max()) {
    return Status::InvalidArgument("value " + std::to_string(v) + " is out of range for FLOAT");
  }
  return Status::OK();
}

Result<int64_t> ParseDecimal(std::string_view s, const DataType& type) {
  std::string_view t = s;
  bool neg = false;
  if (!t.empty() && (t[0] == '-' || t[0] == '+')) {
    neg = t[0] == '-';
    t.remove_prefix(1);
  }
  size_t dot = t.find('.');
  std::string_view ip = t.substr(0, dot);
  std::string_view fp = dot == std::string_view::npos ? std::string_view() : t.substr(dot + 1);
  auto all_digits = [](std::string_view d) {
    for (char c : d) {
      if (c < '0' || c > '9') return false;
    }
    return true;
  };
  if ((ip.empty() && fp.empty()) || !all_digits(ip) || !all_digits(fp)) {
    return Status::InvalidArgument(Quote(s) + " is not a " + type.ToString());
  }
  while (!ip.empty() && ip[0] == '0') ip.remove_prefix(1);
  if (fp.size() > type.scale) {
    return Status::InvalidArgument(Quote(s) + " has more than " + std::to_string(type.scale) + " decimal places for " +
                                   type.ToString());
  }
  if (ip.size() > static_cast<size_t>(type.precision - type.scale)) {
    return Status::InvalidArgument(Quote(s) + " is out of range for " + type.ToString());
  }
  int64_t v = 0;
  for (char c : ip) v = v * 10 + (c - '0');
  for (size_t i = 0; i < type.scale; ++i) v = v * 10 + (i < fp.size() ? fp[i] - '0' : 0);
  return neg ? -v : v;
}

Status AppendVectorFloats(Column* col, const DataType& type, const std::vector<float>& v) {
  if (v.size() != type.dim) {
    return Status::InvalidArgument("vector has dimension " + std::to_string(v.size()) + ", expected " +
                                   std::to_string(type.dim));
  }
  if (type.element == VectorElement::kFloat32) {
    col->AppendFixed(v.data(), v.size() * sizeof(float));
    return Status::OK();
  }
  std::vector<uint16_t> half(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::fabs(v[i]) > kMaxHalf) {
      return Status::InvalidArgument("vector element " + std::to_string(i) + " (" + std::to_string(v[i]) +
                                     ") is out of range for FLOAT16");
    }
    half[i] = FloatToHalf(v[i]);
  }
  col->AppendFixed(half.data(), half.size() * sizeof(uint16_t));
  return Status::OK();
}

}  // namespace

Result<Value> ParseTextValue(std::string_view text, const DataType& type) {
  switch (type.id) {
    case TypeId::kBool: {
      std::string_view t = Trim(text);
      for (auto w : {"true", "t", "yes", "y", "1"}) {
        if (AsciiEqualsIgnoreCase(t, w)) return Value(true);
      }
      for (auto w : {"false", "f", "no", "n", "0"}) {
        if (AsciiEqualsIgnoreCase(t, w)) return Value(false);
      }
      return Status::InvalidArgument(Quote(text) + " is not a BOOL");
    }
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kInt64: {
      int64_t v;
      std::string_view t = Trim(text);
      if (!ParseInt(t, &v)) {
        double d;
        bool oor;
        if (ParseDouble(t, &d, &oor) || oor) {
          if (oor || std::trunc(d) == d)
            return Status::InvalidArgument(Quote(text) + " is out of range for " + type.ToString());
        }
        return Status::InvalidArgument(Quote(text) + " is not an integer (" + type.ToString() + ")");
      }
      VIGIL_RETURN_IF_ERROR(IntRange(v, type));
      return Value(v);
    }
    case TypeId::kFloat32:
    case TypeId::kFloat64: {
      double d;
      bool oor;
      if (!ParseDouble(Trim(text), &d, &oor)) {
        return Status::InvalidArgument(Quote(text) + " is not a number (" + type.ToString() + ")");
      }
      if (oor) return Status::InvalidArgument(Quote(text) + " is out of range for " + type.ToString());
      VIGIL_RETURN_IF_ERROR(FloatRange(d, type));
      return Value(d);
    }
    case TypeId::kString:
      if (text.size() > bounds::kMaxStringValueBytes) {
        return Status::InvalidArgument("string of " + std::to_string(text.size()) + " bytes exceeds the limit of " +
                                       std::to_string(bounds::kMaxStringValueBytes));
      }
      return Value(std::string(text));
    case TypeId::kDate: {
      VIGIL_ASSIGN_OR_RETURN(int64_t days, ParseDateValue(text));
      return Value(days);
    }
    case TypeId::kTimestamp: {
      VIGIL_ASSIGN_OR_RETURN(int64_t micros, ParseTimestampValue(text));
      return Value(micros);
    }
    case TypeId::kDecimal: {
      VIGIL_ASSIGN_OR_RETURN(int64_t v, ParseDecimal(Trim(text), type));
      return Value(v);
    }
    case TypeId::kVector: {
      std::vector<float> v;
      VIGIL_RETURN_IF_ERROR(ParseVectorText(text, type.dim, &v));
      if (type.element == VectorElement::kFloat16) {
        for (float f : v) {
          if (std::fabs(f) > kMaxHalf) return Status::InvalidArgument("vector element out of range for FLOAT16");
        }
      }
      return Value(std::move(v));
    }
  }
  return Status::Internal("unknown type");
}

Status ParseVectorText(std::string_view text, uint32_t dim, std::vector<float>* out) {
  out->clear();
  if (dim) out->reserve(dim);
  size_t p = 0;
  auto skip_ws = [&] {
    while (p < text.size() && (text[p] == ' ' || text[p] == '\t' || text[p] == '\n' || text[p] == '\r')) ++p;
  };
  skip_ws();
  if (p >= text.size() || text[p] != '[') {
    return Status::InvalidArgument("vector must be a JSON array like [0.1, 0.2], got " + Quote(text));
  }
  ++p;
  skip_ws();
  if (p < text.size() && text[p] == ']' && out->empty()) {
    return Status::InvalidArgument("vector is empty");
  }
  while (true) {
    skip_ws();
    size_t start = p;
    while (p < text.size() && text[p] != ',' && text[p] != ']' && !std::isspace(static_cast<unsigned char>(text[p]))) {
      ++p;
    }
    double d;
    bool oor;
    std::string_view num = text.substr(start, p - start);
    if (!ParseDouble(num, &d, &oor)) {
      return Status::InvalidArgument("vector element " + std::to_string(out->size()) + " " + Quote(num) +
                                     " is not a number");
    }
    if (oor || std::fabs(d) > std::numeric_limits<float>::max()) {
      return Status::InvalidArgument("vector element " + std::to_string(out->size()) + " " + Quote(num) +
                                     " is out of range for FLOAT32");
    }
    if (dim && out->size() == dim) {
      return Status::InvalidArgument("vector has more than " + std::to_string(dim) + " elements");
    }
    out->push_back(static_cast<float>(d));
    skip_ws();
    if (p < text.size() && text[p] == ',') {
      ++p;
      continue;
    }
    if (p < text.size() && text[p] == ']') break;
    return Status::InvalidArgument("vector is not a well-formed JSON array of numbers");
  }
  ++p;
  skip_ws();
  if (p != text.size()) return Status::InvalidArgument("unexpected text after the vector's closing ']'");
  if (dim && out->size() != dim) {
    return Status::InvalidArgument("vector has dimension " + std::to_string(out->size()) + ", expected " +
                                   std::to_string(dim));
  }
  if (out->size() > bounds::kMaxVectorDimension) {
    return Status::InvalidArgument("vector dimension exceeds " + std::to_string(bounds::kMaxVectorDimension));
  }
  return Status::OK();
}

namespace ingest {

namespace {

bool IsNameStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool IsNamePart(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

}  // namespace

Status CheckColumnName(std::string_view name) {
  if (ValidateIdentifier(name, "column name").ok()) return Status::OK();
  if (name.empty()) return Status::InvalidArgument("column name is empty");
  if (!IsNameStart(name[0])) {
    return Status::InvalidArgument("column name " + Excerpt(name, 1) + " must start with a letter or '_'");
  }
  for (size_t i = 1; i < name.size(); ++i) {
    if (!IsNamePart(name[i])) {
      return Status::InvalidArgument("column name " + Excerpt(name, i + 1) + " has an invalid character at position " +
                                     std::to_string(i + 1) + "; allowed: letters, digits, '_'");
    }
  }
  if (name.size() > kMaxIdentifierLength) {
    return Status::InvalidArgument("column name " + Excerpt(name) + " is " + std::to_string(name.size()) +
                                   " characters long; the limit is " + std::to_string(kMaxIdentifierLength));
  }
  return Status::InvalidArgument("column name " + Excerpt(name) + " is not a valid identifier");
}

Status CheckUtf8Line(std::string_view file, uint64_t line_no, std::string_view line) {
  size_t bad = FindInvalidUtf8(line);
  if (bad == std::string_view::npos) return Status::OK();
  static const char kHex[] = "0123456789abcdef";
  unsigned char b = static_cast<unsigned char>(line[bad]);
  return TextError(file, line_no, bad + 1, std::string("invalid UTF-8 (byte 0x") + kHex[b >> 4] + kHex[b & 15] + ")");
}

Status AppendText(Column* col, const Field& field, const std::string_view* text) {
  if (text == nullptr) {
    if (!field.nullable) return Status::InvalidArgument("missing value for non-nullable column");
    col->AppendNull();
    return Status::OK();
  }
  const DataType& type = field.type;
  if (type.id == TypeId::kString) {
    if (text->size() > bounds::kMaxStringValueBytes) {
      return Status::InvalidArgument("string value exceeds " + std::to_string(bounds::kMaxStringValueBytes) + " bytes");
    }
    VIGIL_RETURN_IF_ERROR(type.CheckLength(*text));
    col->AppendString(*text);
    return Status::OK();
  }
  if (type.id == TypeId::kVector) {
    thread_local std::vector<float> v;
    VIGIL_RETURN_IF_ERROR(ParseVectorText(*text, type.dim, &v));
    return AppendVectorFloats(col, type, v);
  }
  VIGIL_ASSIGN_OR_RETURN(Value v, ParseTextValue(*text, type));
  return col->Append(v);
}

Status AppendValue(Column* col, const Field& field, const Value& v) {
  const DataType& type = field.type;
  if (IsNull(v)) {
    if (!field.nullable) return Status::InvalidArgument("null value for non-nullable column");
    col->AppendNull();
    return Status::OK();
  }
  if (type.id == TypeId::kVector) {
    const auto* fv = std::get_if<std::vector<float>>(&v);
    if (fv == nullptr) return Status::InvalidArgument("expected a vector (a JSON array of numbers)");
    return AppendVectorFloats(col, type, *fv);
  }
  if (type.IsInteger() || type.id == TypeId::kDate || type.id == TypeId::kTimestamp) {
    const auto* iv = std::get_if<int64_t>(&v);
    if (iv == nullptr) return Status::InvalidArgument("expected an integer for " + type.ToString());
    if (type.IsInteger()) VIGIL_RETURN_IF_ERROR(IntRange(*iv, type));
    return col->Append(v);
  }
  if (type.id == TypeId::kFloat32 || type.id == TypeId::kFloat64) {
    double d;
    if (const auto* iv = std::get_if<int64_t>(&v)) {
      d = static_cast<double>(*iv);
    } else if (const auto* dv = std::get_if<double>(&v)) {
      d = *dv;
    } else {
      return Status::InvalidArgument("expected a number for " + type.ToString());
    }
    VIGIL_RETURN_IF_ERROR(FloatRange(d, type));
    return col->Append(Value(d));
  }
  if (type.id == TypeId::kBool && !std::holds_alternative<bool>(v)) {
    return Status::InvalidArgument("expected true or false for BOOL");
  }
  if (type.id == TypeId::kString && !std::holds_alternative<std::string>(v)) {
    return Status::InvalidArgument("expected a string for STRING");
  }
  if (type.id == TypeId::kDecimal) {
    return Status::InvalidArgument("expected a decimal as a string or number for " + type.ToString());
  }
  return col->Append(v);
}

void TypeGuess::Observe(std::string_view text) {
  std::string_view t = Trim(text);
  int64_t i;
  double d;
  bool oor;
  int64_t scratch;
  if (AsciiEqualsIgnoreCase(t, "true") || AsciiEqualsIgnoreCase(t, "false")) {
    Merge(kBool);
  } else if (ParseInt(t, &i)) {
    Merge(kInt);
  } else if (ParseDouble(t, &d, &oor) && !oor) {
    Merge(kDouble);
  } else if (ParseDateText(t, &scratch)) {
    Merge(kDate);
  } else if (ParseTimestampText(t, &scratch, true)) {
    Merge(kTimestamp);
  } else if (!t.empty() && t[0] == '[') {
    std::vector<float> v;
    if (ParseVectorText(t, 0, &v).ok()) {
      ObserveVector(static_cast<uint32_t>(v.size()));
    } else {
      Merge(kString);
    }
  } else {
    Merge(kString);
  }
}

void TypeGuess::ObserveJsonString(std::string_view text) {
  int64_t scratch;
  if (ParseDateText(text, &scratch)) {
    Merge(kDate);
  } else if (ParseTimestampText(text, &scratch, true)) {
    Merge(kTimestamp);
  } else {
    Merge(kString);
  }
}

void TypeGuess::ObserveVector(uint32_t dim) {
  if (kind_ == kVector && dim_ != dim) {
    kind_ = kString;
    return;
  }
  if (kind_ == kNone) dim_ = dim;
  Merge(kVector);
}

void TypeGuess::Merge(Kind k) {
  if (kind_ == kNone || kind_ == k) {
    kind_ = k;
  } else if ((kind_ == kInt && k == kDouble) || (kind_ == kDouble && k == kInt)) {
    kind_ = kDouble;
  } else if ((kind_ == kDate && k == kTimestamp) || (kind_ == kTimestamp && k == kDate)) {
    kind_ = kTimestamp;
  } else {
    kind_ = kString;
  }
}

DataType TypeGuess::Result() const {
  switch (kind_) {
    case kBool:
      return DataType::Of(TypeId::kBool);
    case kInt:
      return DataType::Of(TypeId::kInt64);
    case kDouble:
      return DataType::Of(TypeId::kFloat64);
    case kDate:
      return DataType::Of(TypeId::kDate);
    case kTimestamp:
      return DataType::Of(TypeId::kTimestamp);
    case kVector:
      return DataType::Vector(VectorElement::kFloat32, dim_);
    case kNone:
    case kString:
      break;
  }
  return DataType::Of(TypeId::kString);
}

}  // namespace ingest
}  // namespace vigil
