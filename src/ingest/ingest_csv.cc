// CSV reader (RFC 4180: ',' separated, '"' quoted with "" escapes, records may
// span lines inside quotes, LF or CRLF). The first record is the header. An
// unquoted empty field is NULL; a quoted one is the empty string. The file must
// be UTF-8 (a bad byte is an error at its line and column); control characters,
// NUL included, are kept in values.
#include <algorithm>
#include <unordered_set>

#include "ingest/ingest_internal.h"

namespace vigil::ingest {

namespace {

struct CsvField {
  std::string text;
  bool quoted = false;
  uint64_t line = 0;
  uint64_t column = 0;  // 1-based byte column of the field's first character
};

// Reads records field by field from a LineReader.
class CsvParser {
 public:
  explicit CsvParser(ByteSource* src) : src_(src), lines_(src) {}

  // The next non-empty record; false at the end.
  Result<bool> Next(std::vector<CsvField>* fields, size_t* count) {
    std::string_view line;
    do {
      VIGIL_ASSIGN_OR_RETURN(bool more, lines_.Next(&line));
      if (!more) return false;
    } while (line.empty());
    VIGIL_RETURN_IF_ERROR(CheckUtf8Line(src_->name(), lines_.line_number(), line));
    *count = 0;
    size_t p = 0;
    while (true) {
      if (fields->size() <= *count) fields->emplace_back();
      CsvField& f = (*fields)[(*count)++];
      f.text.clear();
      f.line = lines_.line_number();
      f.column = p + 1;
      f.quoted = p < line.size() && line[p] == '"';
      if (f.quoted) {
        VIGIL_RETURN_IF_ERROR(ReadQuoted(&line, &p, &f));
      } else {
        size_t end = line.find(',', p);
        if (end == std::string_view::npos) end = line.size();
        std::string_view raw = line.substr(p, end - p);
        if (raw.find('"') != std::string_view::npos) {
          return TextError(src_->name(), f.line, f.column + raw.find('"'), "unexpected '\"' inside an unquoted field");
        }
        f.text.assign(raw);
        p = end;
      }
      if (p >= line.size()) return true;
      ++p;  // the ','
    }
  }

  uint64_t bytes_consumed() const { return lines_.bytes_consumed(); }

 private:
  // Reads a quoted field starting at line[*p] == '"', continuing onto later lines.
  Status ReadQuoted(std::string_view* line, size_t* p, CsvField* f) {
    size_t i = *p + 1;
    while (true) {
      size_t q = line->find('"', i);
      if (q == std::string_view::npos) {
        f->text.append(line->substr(i));
        f->text.push_back('\n');
        VIGIL_ASSIGN_OR_RETURN(bool more, lines_.Next(line));
        if (!more) return TextError(src_->name(), f->line, f->column, "unterminated quoted field");
        VIGIL_RETURN_IF_ERROR(CheckUtf8Line(src_->name(), lines_.line_number(), *line));
        i = 0;
        continue;
      }
      f->text.append(line->substr(i, q - i));
      if (q + 1 < line->size() && (*line)[q + 1] == '"') {
        f->text.push_back('"');
        i = q + 2;
        continue;
      }
      *p = q + 1;
      if (*p < line->size() && (*line)[*p] != ',') {
        return TextError(src_->name(), lines_.line_number(), *p + 1,
                         "expected ',' or end of line after a closing quote");
      }
      return Status::OK();
    }
  }

  ByteSource* src_;
  LineReader lines_;
};

std::string FieldNames(const Schema& schema) {
  std::string out;
  for (const auto& f : schema.fields()) out += (out.empty() ? "" : ", ") + f.name;
  return out;
}

// Strips a UTF-8 byte-order mark from the first header field.
void StripBom(CsvField* f) {
  if (f->text.rfind("\xEF\xBB\xBF", 0) == 0) f->text.erase(0, 3);
}

Status ValidateHeader(const std::string& file, std::vector<CsvField>& header, size_t count) {
  if (count > 0) StripBom(&header[0]);
  std::unordered_set<std::string_view> names;
  for (size_t i = 0; i < count; ++i) {
    Status st = CheckColumnName(header[i].text);
    if (!st.ok()) return TextError(file, header[i].line, header[i].column, st.message());
    if (!names.insert(header[i].text).second) {
      return TextError(file, header[i].line, header[i].column,
                       "column " + Excerpt(header[i].text) + " appears twice in the header");
    }
  }
  return Status::OK();
}

class CsvReader : public RecordBatchReader {
 public:
  CsvReader(std::unique_ptr<ByteSource> src, SchemaPtr schema, size_t batch_rows)
      : src_(std::move(src)), parser_(src_.get()), schema_(std::move(schema)), batch_rows_(batch_rows) {}

  // Reads the header and maps its columns onto the schema.
  Status Init() {
    size_t count = 0;
    VIGIL_ASSIGN_OR_RETURN(bool any, parser_.Next(&fields_, &count));
    if (!any) return TextError(src_->name(), 1, 1, "empty file: a header line is required");
    VIGIL_RETURN_IF_ERROR(ValidateHeader(src_->name(), fields_, count));
    std::vector<bool> seen(schema_->num_fields(), false);
    for (size_t i = 0; i < count; ++i) {
      auto idx = schema_->IndexOf(fields_[i].text);
      if (!idx) {
        return TextError(
            src_->name(), fields_[i].line, fields_[i].column,
            "unknown column " + Excerpt(fields_[i].text) + " (the table has: " + FieldNames(*schema_) + ")");
      }
      if (seen[*idx]) {
        return TextError(src_->name(), fields_[i].line, fields_[i].column,
                         "column " + Excerpt(fields_[i].text) + " appears twice in the header");
      }
      seen[*idx] = true;
      field_of_position_.push_back(*idx);
    }
    for (size_t f = 0; f < schema_->num_fields(); ++f) {
      if (!seen[f] && !schema_->field(f).nullable) {
        return TextError(src_->name(), 1, 1, "missing non-nullable column '" + schema_->field(f).name + "'");
      }
      if (!seen[f]) absent_.push_back(f);
    }
    return Status::OK();
  }

  SchemaPtr schema() const override { return schema_; }

  Result<std::optional<RecordBatch>> Next() override {
    RecordBatch batch = RecordBatch::Empty(schema_);
    for (auto& c : batch.columns) c.Reserve(batch_rows_);
    while (batch.num_rows < batch_rows_) {
      size_t count = 0;
      VIGIL_ASSIGN_OR_RETURN(bool more, parser_.Next(&fields_, &count));
      if (!more) break;
      VIGIL_RETURN_IF_ERROR(AppendRecord(&batch, count));
      ++batch.num_rows;
    }
    if (batch.num_rows == 0) return std::optional<RecordBatch>();
    return std::optional<RecordBatch>(std::move(batch));
  }

 private:
  Status AppendRecord(RecordBatch* batch, size_t count) {
    if (count != field_of_position_.size()) {
      const CsvField& last = fields_[count > field_of_position_.size() ? field_of_position_.size() : count - 1];
      return TextError(
          src_->name(), last.line, last.column,
          "expected " + std::to_string(field_of_position_.size()) + " fields, found " + std::to_string(count));
    }
    for (size_t i = 0; i < count; ++i) {
      const CsvField& cell = fields_[i];
      const Field& field = schema_->field(field_of_position_[i]);
      std::string_view text = cell.text;
      bool is_null = !cell.quoted && cell.text.empty();
      Status st = AppendText(&batch->columns[field_of_position_[i]], field, is_null ? nullptr : &text);
      if (!st.ok()) {
        return TextError(src_->name(), cell.line, cell.column, "column '" + field.name + "': " + st.message());
      }
    }
    for (size_t f : absent_) batch->columns[f].AppendNull();
    return Status::OK();
  }

  std::unique_ptr<ByteSource> src_;
  CsvParser parser_;
  SchemaPtr schema_;
  size_t batch_rows_;
  std::vector<CsvField> fields_;
  std::vector<size_t> field_of_position_;  // header position -> schema field
  std::vector<size_t> absent_;             // nullable fields the file lacks
};

}  // namespace

Result<SchemaPtr> InferCsvSchema(ByteSource* src, const IngestOptions& options) {
  CsvParser parser(src);
  std::vector<CsvField> fields;
  size_t count = 0;
  VIGIL_ASSIGN_OR_RETURN(bool any, parser.Next(&fields, &count));
  if (!any) return TextError(src->name(), 1, 1, "empty file: a header line is required");
  VIGIL_RETURN_IF_ERROR(ValidateHeader(src->name(), fields, count));
  std::vector<std::string> names;
  for (size_t i = 0; i < count; ++i) names.push_back(fields[i].text);
  std::vector<TypeGuess> guesses(count);
  for (size_t row = 0; row < options.infer_sample_rows; ++row) {
    size_t n = 0;
    VIGIL_ASSIGN_OR_RETURN(bool more, parser.Next(&fields, &n));
    if (!more) break;
    if (n != count) {
      return TextError(src->name(), fields[n - 1].line, fields[n - 1].column,
                       "expected " + std::to_string(count) + " fields, found " + std::to_string(n));
    }
    for (size_t i = 0; i < n; ++i) {
      if (!fields[i].quoted && fields[i].text.empty()) {
        guesses[i].ObserveNull();
      } else {
        guesses[i].Observe(fields[i].text);
      }
    }
    if (parser.bytes_consumed() > options.infer_sample_bytes) break;
  }
  std::vector<Field> out;
  for (size_t i = 0; i < count; ++i) out.push_back(Field{-1, names[i], guesses[i].Result(), true});
  Result<SchemaPtr> schema = Schema::Make(std::move(out));
  if (!schema.ok()) return TextError(src->name(), 1, 1, schema.status().message());
  return schema;
}

Result<std::unique_ptr<RecordBatchReader>> OpenCsv(std::unique_ptr<ByteSource> src, const IngestOptions& options) {
  SchemaPtr schema = options.schema;
  if (!schema) {
    VIGIL_ASSIGN_OR_RETURN(schema, InferCsvSchema(src.get(), options));
  }
  auto reader = std::make_unique<CsvReader>(std::move(src), schema, options.batch_rows);
  VIGIL_RETURN_IF_ERROR(reader->Init());
  return std::unique_ptr<RecordBatchReader>(std::move(reader));
}

}  // namespace vigil::ingest
