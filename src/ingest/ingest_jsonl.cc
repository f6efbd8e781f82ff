// JSON Lines reader: one JSON object per line; blank lines are skipped. Keys
// are column names; a missing key or null is NULL; vectors are arrays. Invalid
// UTF-8 is refused as in CSV; "\u0000" is a NUL in a STRING, as a raw NUL is in CSV.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "ingest/ingest_internal.h"
#include "vigil/common/bounds.h"
#include "vigil/common/json_nesting.h"

namespace vigil::ingest {

namespace {

using Json = nlohmann::ordered_json;

bool IsBlank(std::string_view line) {
  for (char c : line) {
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// nlohmann's parse error without the input it quotes ("; last read: '<token>'"):
// the input up to the error is shown as an ExcerptEnd instead.
std::string ParseErrorText(const nlohmann::json::parse_error& e, std::string_view line) {
  std::string what = e.what();
  const size_t start = what.find("parse error");
  if (start != std::string::npos) what.erase(0, start);
  const size_t read = what.find("; last read: '");
  if (read == std::string::npos) return what;
  std::string expected;
  static constexpr std::string_view kExpected[] = {
      "true literal", "false literal", "null literal", "string literal", "number literal",        "'['", "'{'", "']'",
      "'}'",          "':'",           "','",          "end of input",   "'[', '{', or a literal"};
  for (std::string_view name : kExpected) {
    const std::string tail = "'; expected " + std::string(name);
    if (what.size() >= tail.size() && what.compare(what.size() - tail.size(), tail.size(), tail) == 0) {
      expected = tail.substr(1);
    }
  }
  what.erase(read);
  const size_t end = std::min<size_t>(e.byte, line.size());
  return what + "; near " + ExcerptEnd(line.substr(0, end)) + expected;
}

// Parses one line as a JSON object; errors name file:line:column.
Result<Json> ParseObjectLine(const std::string& file, uint64_t line_no, std::string_view line) {
  VIGIL_RETURN_IF_ERROR(CheckUtf8Line(file, line_no, line));
  if (Status depth = CheckJsonNesting(line, bounds::kMaxJsonDepth, "the row"); !depth.ok()) {
    return TextError(file, line_no, 1, depth.message());
  }
  Json j;
  try {
    j = Json::parse(line);
  } catch (const nlohmann::json::parse_error& e) {
    uint64_t col = e.byte == 0 ? 1 : e.byte;
    return TextError(file, line_no, col, "malformed JSON: " + ParseErrorText(e, line));
  } catch (const nlohmann::json::out_of_range&) {
    return TextError(file, line_no, 1, "malformed JSON: a number is out of range");
  } catch (const std::exception&) {
    return TextError(file, line_no, 1, "malformed JSON");
  }
  if (!j.is_object()) return TextError(file, line_no, 1, "expected a JSON object per line");
  return j;
}

// 1-based column of `"key"` in the line (1 when not found verbatim, e.g. escaped).
uint64_t KeyColumn(std::string_view line, const std::string& key) {
  size_t pos = line.find("\"" + key + "\"");
  return pos == std::string_view::npos ? 1 : pos + 1;
}

Status AppendJsonArray(Column* col, const Field& field, const Json& j) {
  if (field.type.id != TypeId::kVector) {
    return Status::InvalidArgument("arrays are only accepted for VECTOR columns, not " + field.type.ToString());
  }
  std::vector<float> v;
  v.reserve(j.size());
  for (const auto& e : j) {
    if (!e.is_number())
      return Status::InvalidArgument("vector element " + std::to_string(v.size()) + " is not a number");
    double d = e.get<double>();
    if (!std::isfinite(d) || std::fabs(d) > std::numeric_limits<float>::max()) {
      return Status::InvalidArgument("vector element " + std::to_string(v.size()) + " is out of range for FLOAT32");
    }
    v.push_back(static_cast<float>(d));
  }
  return AppendValue(col, field, Value(std::move(v)));
}

Status AppendJson(Column* col, const Field& field, const Json& j) {
  switch (j.type()) {
    case Json::value_t::null:
      return AppendText(col, field, nullptr);
    case Json::value_t::string: {
      std::string_view s = j.get_ref<const std::string&>();
      return AppendText(col, field, &s);
    }
    case Json::value_t::boolean:
      return AppendValue(col, field, Value(j.get<bool>()));
    case Json::value_t::number_integer:
      if (field.type.id == TypeId::kDecimal) break;
      return AppendValue(col, field, Value(j.get<int64_t>()));
    case Json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (field.type.id == TypeId::kDecimal) break;
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Status::InvalidArgument("value " + std::to_string(u) + " is out of range for " + field.type.ToString());
      }
      return AppendValue(col, field, Value(static_cast<int64_t>(u)));
    }
    case Json::value_t::number_float:
      if (field.type.id == TypeId::kDecimal) break;
      return AppendValue(col, field, Value(j.get<double>()));
    case Json::value_t::array:
      return AppendJsonArray(col, field, j);
    default:
      return Status::InvalidArgument("nested objects are not supported");
  }
  std::string text = j.dump();  // a number for a DECIMAL column: parse its text
  std::string_view view = text;
  return AppendText(col, field, &view);
}

class JsonlReader : public RecordBatchReader {
 public:
  JsonlReader(std::unique_ptr<ByteSource> src, SchemaPtr schema, size_t batch_rows)
      : src_(std::move(src)), lines_(src_.get()), schema_(std::move(schema)), batch_rows_(batch_rows) {}

  SchemaPtr schema() const override { return schema_; }

  Result<std::optional<RecordBatch>> Next() override {
    RecordBatch batch = RecordBatch::Empty(schema_);
    for (auto& c : batch.columns) c.Reserve(batch_rows_);
    std::string_view line;
    while (batch.num_rows < batch_rows_) {
      VIGIL_ASSIGN_OR_RETURN(bool more, lines_.Next(&line));
      if (!more) break;
      if (IsBlank(line)) continue;
      VIGIL_RETURN_IF_ERROR(AppendLine(&batch, line));
      ++batch.num_rows;
    }
    if (batch.num_rows == 0) return std::optional<RecordBatch>();
    return std::optional<RecordBatch>(std::move(batch));
  }

 private:
  Status AppendLine(RecordBatch* batch, std::string_view line) {
    const std::string& file = src_->name();
    uint64_t line_no = lines_.line_number();
    VIGIL_ASSIGN_OR_RETURN(Json obj, ParseObjectLine(file, line_no, line));
    seen_.assign(schema_->num_fields(), 0);
    for (const auto& [key, value] : obj.items()) {
      auto idx = schema_->IndexOf(key);
      if (!idx) {
        Status bad_name = CheckColumnName(key);
        return TextError(file, line_no, KeyColumn(line, key),
                         bad_name.ok() ? "unknown column " + Excerpt(key) : bad_name.message());
      }
      if (seen_[*idx]) continue;
      seen_[*idx] = 1;
      const Field& field = schema_->field(*idx);
      Status st = AppendJson(&batch->columns[*idx], field, value);
      if (!st.ok()) {
        return TextError(file, line_no, KeyColumn(line, key), "column '" + field.name + "': " + st.message());
      }
    }
    for (size_t f = 0; f < schema_->num_fields(); ++f) {
      if (seen_[f]) continue;
      const Field& field = schema_->field(f);
      if (!field.nullable) return TextError(file, line_no, 1, "missing non-nullable column '" + field.name + "'");
      batch->columns[f].AppendNull();
    }
    return Status::OK();
  }

  std::unique_ptr<ByteSource> src_;
  LineReader lines_;
  SchemaPtr schema_;
  size_t batch_rows_;
  std::vector<uint8_t> seen_;
};

void ObserveJson(TypeGuess* g, const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      g->ObserveNull();
      break;
    case Json::value_t::boolean:
      g->ObserveBool();
      break;
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      g->ObserveInt();
      break;
    case Json::value_t::number_float:
      g->ObserveDouble();
      break;
    case Json::value_t::string:
      g->ObserveJsonString(v.get_ref<const std::string&>());
      break;
    default:
      g->ObserveVector(static_cast<uint32_t>(v.size()));
      break;
  }
}

// Checks a sampled value can be inferred: arrays must hold numbers only.
Status CheckInferable(const Json& v) {
  if (v.is_object()) return Status::InvalidArgument("nested objects are not supported");
  if (!v.is_array()) return Status::OK();
  if (v.empty()) return Status::InvalidArgument("empty arrays are not supported");
  for (const auto& e : v) {
    if (!e.is_number()) return Status::InvalidArgument("arrays must hold numbers only (vectors)");
  }
  return Status::OK();
}

}  // namespace

Result<SchemaPtr> InferJsonlSchema(ByteSource* src, const IngestOptions& options) {
  LineReader lines(src);
  std::vector<std::string> names;
  std::vector<TypeGuess> guesses;
  std::string_view line;
  size_t rows = 0;
  while (rows < options.infer_sample_rows && lines.bytes_consumed() <= options.infer_sample_bytes) {
    VIGIL_ASSIGN_OR_RETURN(bool more, lines.Next(&line));
    if (!more) break;
    if (IsBlank(line)) continue;
    ++rows;
    VIGIL_ASSIGN_OR_RETURN(Json obj, ParseObjectLine(src->name(), lines.line_number(), line));
    for (const auto& [key, value] : obj.items()) {
      Status st = CheckColumnName(key);
      if (st.ok()) st = CheckInferable(value);
      if (!st.ok()) return TextError(src->name(), lines.line_number(), KeyColumn(line, key), st.message());
      size_t i = 0;
      while (i < names.size() && names[i] != key) ++i;
      if (i == names.size()) {
        names.push_back(key);
        guesses.emplace_back();
      }
      ObserveJson(&guesses[i], value);
    }
  }
  if (names.empty()) return TextError(src->name(), 1, 1, "no JSON objects with keys to infer a schema from");
  std::vector<Field> fields;
  for (size_t i = 0; i < names.size(); ++i) fields.push_back(Field{-1, names[i], guesses[i].Result(), true});
  Result<SchemaPtr> schema = Schema::Make(std::move(fields));
  if (!schema.ok()) return Status::InvalidArgument(src->name() + ": " + schema.status().message());
  return schema;
}

Result<std::unique_ptr<RecordBatchReader>> OpenJsonl(std::unique_ptr<ByteSource> src, const IngestOptions& options) {
  SchemaPtr schema = options.schema;
  if (!schema) {
    VIGIL_ASSIGN_OR_RETURN(schema, InferJsonlSchema(src.get(), options));
  }
  return std::unique_ptr<RecordBatchReader>(new JsonlReader(std::move(src), schema, options.batch_rows));
}

}  // namespace vigil::ingest
