#include "numpy_columns.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "vigil/common/status.h"

namespace vigil::python {
namespace {

std::string At(const Field& field, uint64_t row) { return "column '" + field.name + "', row " + std::to_string(row); }

// The bytes of `obj`, a C-contiguous numpy array whose items are `item_size` bytes wide.
Result<std::pair<const uint8_t*, size_t>> Bytes(const py::handle& obj, size_t item_size, const std::string& what) {
  if (!py::isinstance<py::array>(obj)) return Status::Internal(what + " is not a numpy array");
  auto array = py::reinterpret_borrow<py::array>(obj);
  if (!(array.flags() & py::array::c_style)) return Status::Internal(what + " is not C-contiguous");
  if (static_cast<size_t>(array.itemsize()) != item_size && array.size() > 0) {
    return Status::Internal(what + " has " + std::to_string(array.itemsize()) + "-byte items, expected " +
                            std::to_string(item_size));
  }
  return std::make_pair(static_cast<const uint8_t*>(array.data()), static_cast<size_t>(array.nbytes()));
}

// Fills `column` from one field's (data, offsets, valid) of a chunk of `rows` rows.
Status CopyField(const Field& field, size_t rows, const py::handle& entry, Column* column) {
  auto parts = py::reinterpret_borrow<py::tuple>(entry);
  if (parts.size() != 3) return Status::Internal("column '" + field.name + "': expected (data, offsets, valid)");
  const bool is_string = field.type.id == TypeId::kString;
  const size_t width = is_string ? 1 : field.type.FixedWidth();
  const size_t item = field.type.id == TypeId::kVector ? width / field.type.dim : width;
  VIGIL_ASSIGN_OR_RETURN(auto data, Bytes(parts[0], item, "column '" + field.name + "' data"));
  if (!is_string && data.second != rows * width) {
    return Status::Internal("column '" + field.name + "' holds " + std::to_string(data.second) + " bytes for " +
                            std::to_string(rows) + " rows of " + field.type.ToString());
  }
  column->mutable_data().assign(reinterpret_cast<const char*>(data.first), data.second);
  if (is_string) {
    VIGIL_ASSIGN_OR_RETURN(auto offsets, Bytes(parts[1], sizeof(uint64_t), "column '" + field.name + "' offsets"));
    if (offsets.second != (rows + 1) * sizeof(uint64_t)) return Status::Internal("string offsets of the wrong length");
    const auto* first = reinterpret_cast<const uint64_t*>(offsets.first);
    column->mutable_offsets().assign(first, first + rows + 1);
  }
  if (!parts[2].is_none()) {
    VIGIL_ASSIGN_OR_RETURN(auto valid, Bytes(parts[2], 1, "column '" + field.name + "' validity"));
    if (valid.second != rows) return Status::Internal("validity of the wrong length");
    column->mutable_validity().assign(valid.first, valid.first + rows);
  }
  return column->SetSizeFromBuffers(rows);
}

// The checks INSERT makes on a value, for a column filled from raw buffers.
Status CheckValues(const Field& field, const Column& column, uint64_t first_row) {
  for (size_t r = 0; r < column.size(); ++r) {
    if (!column.IsValid(r)) {
      if (!field.nullable) return Status::InvalidArgument(At(field, first_row + r) + ": NULL in a NOT NULL column");
      continue;
    }
    if (field.type.id == TypeId::kString) {
      std::string_view s = column.StringAt(r);
      if (size_t bad = FindInvalidUtf8(s); bad != std::string_view::npos) {
        return Status::InvalidArgument(At(field, first_row + r) + ": not UTF-8 at byte " + std::to_string(bad));
      }
      Status length = field.type.CheckLength(s);
      if (!length.ok()) return Status::InvalidArgument(At(field, first_row + r) + ": " + length.message());
    } else if (field.type.id == TypeId::kVector) {
      const size_t dim = field.type.dim;
      for (size_t e = 0; e < dim; ++e) {
        const float x = field.type.element == VectorElement::kFloat32
                            ? column.values<float>()[r * dim + e]
                            : HalfToFloat(column.values<uint16_t>()[r * dim + e]);
        if (!std::isfinite(x)) {
          return Status::InvalidArgument(At(field, first_row + r) + ": vector element " + std::to_string(e) +
                                         " is not finite");
        }
      }
    }
  }
  return Status::OK();
}

class ChunkReader : public RecordBatchReader {
 public:
  ChunkReader(SchemaPtr schema, py::iterator chunks, PendingPythonError* pending)
      : schema_(std::move(schema)), chunks_(std::move(chunks)), pending_(pending) {}

  ~ChunkReader() override {
    py::gil_scoped_acquire gil;
    chunks_ = py::iterator();
  }

  SchemaPtr schema() const override { return schema_; }

  // Copies the (rows, fields) chunk into `batch`; the GIL is held.
  Status CopyChunk(const py::object& chunk, RecordBatch* batch) {
    auto parts = chunk.cast<py::tuple>();
    batch->num_rows = parts[0].cast<size_t>();
    auto fields = parts[1].cast<py::list>();
    if (fields.size() != schema_->num_fields()) return Status::Internal("a chunk with the wrong number of columns");
    for (size_t i = 0; i < fields.size(); ++i) {
      VIGIL_RETURN_IF_ERROR(CopyField(schema_->field(i), batch->num_rows, fields[i], &batch->columns[i]));
    }
    return Status::OK();
  }

  Result<std::optional<RecordBatch>> Next() override {
    RecordBatch batch = RecordBatch::Empty(schema_);
    {
      py::gil_scoped_acquire gil;
      py::object chunk = py::reinterpret_steal<py::object>(PyIter_Next(chunks_.ptr()));
      if (!chunk) {
        if (!PyErr_Occurred()) return std::optional<RecordBatch>();
        pending_->error.emplace();
        return Status::Cancelled("reading the rows given failed: " + std::string(pending_->error->what()));
      }
      // No C++ exception crosses the engine: a malformed chunk is an error like any other.
      try {
        VIGIL_RETURN_IF_ERROR(CopyChunk(chunk, &batch));
      } catch (const std::exception& e) {
        return Status::Internal(std::string("a malformed chunk of rows: ") + e.what());
      }
    }
    for (size_t i = 0; i < schema_->num_fields(); ++i) {
      VIGIL_RETURN_IF_ERROR(CheckValues(schema_->field(i), batch.columns[i], pending_->rows));
    }
    pending_->rows += batch.num_rows;
    return std::optional<RecordBatch>(std::move(batch));
  }

 private:
  SchemaPtr schema_;
  py::iterator chunks_;
  PendingPythonError* pending_;
};

// The numpy dtype of a column at its stored width.
py::dtype StoredDtype(const DataType& type) {
  switch (type.id) {
    case TypeId::kBool:
      return py::dtype("bool");
    case TypeId::kInt8:
      return py::dtype("int8");
    case TypeId::kInt16:
      return py::dtype("int16");
    case TypeId::kInt32:
    case TypeId::kDate:
      return py::dtype("int32");
    case TypeId::kFloat32:
      return py::dtype("float32");
    case TypeId::kFloat64:
      return py::dtype("float64");
    case TypeId::kString:
      return py::dtype("object");
    case TypeId::kVector:
      return py::dtype(type.element == VectorElement::kFloat32 ? "float32" : "float16");
    case TypeId::kInt64:
    case TypeId::kTimestamp:
    case TypeId::kDecimal:
      break;
  }
  return py::dtype("int64");
}

}  // namespace

std::unique_ptr<RecordBatchReader> MakeChunkReader(SchemaPtr schema, py::iterator chunks, PendingPythonError* pending) {
  return std::make_unique<ChunkReader>(std::move(schema), std::move(chunks), pending);
}

Result<py::tuple> ReadColumns(const Dataset& ds, const std::vector<std::string>& columns) {
  std::vector<Field> fields;
  for (const std::string& name : columns) {
    std::optional<size_t> i = ds.schema()->IndexOf(name);
    if (!i) return Status::InvalidArgument("the table has no column '" + name + "'");
    fields.push_back(ds.schema()->field(*i));
  }
  if (columns.empty()) fields = ds.schema()->fields();
  const size_t rows = ds.CountRows();
  std::vector<py::array> arrays;
  std::vector<std::vector<uint8_t>> valid(fields.size());
  std::vector<Column> strings(fields.size());
  for (const Field& f : fields) {
    std::vector<py::ssize_t> shape{static_cast<py::ssize_t>(rows)};
    if (f.type.id == TypeId::kVector) shape.push_back(f.type.dim);
    arrays.emplace_back(f.type.id == TypeId::kString ? py::dtype("uint8") : StoredDtype(f.type),
                        f.type.id == TypeId::kString ? std::vector<py::ssize_t>{0} : shape);
  }
  std::vector<uint8_t*> out;
  for (auto& a : arrays) out.push_back(static_cast<uint8_t*>(a.mutable_data()));
  Status st = [&]() -> Status {
    py::gil_scoped_release unlocked;
    ScanOptions scan;
    for (const Field& f : fields) scan.columns.push_back(f.name);
    VIGIL_ASSIGN_OR_RETURN(std::unique_ptr<RecordBatchReader> reader, ds.Scan(scan));
    size_t at = 0;
    for (;;) {
      VIGIL_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, reader->Next());
      if (!batch) break;
      if (at + batch->num_rows > rows) return Status::Corruption("the scan yields more rows than the manifest counts");
      for (size_t c = 0; c < fields.size(); ++c) {
        const Column& col = batch->columns[c];
        if (col.has_nulls() && valid[c].empty()) valid[c].assign(rows, 1);
        if (!valid[c].empty()) {
          for (size_t r = 0; r < batch->num_rows; ++r) valid[c][at + r] = col.IsValid(r) ? 1 : 0;
        }
        if (fields[c].type.id == TypeId::kString) {
          if (strings[c].size() == 0) strings[c] = Column(fields[c].type);
          strings[c].AppendRange(col, 0, batch->num_rows);
        } else {
          const size_t w = fields[c].type.FixedWidth();
          std::memcpy(out[c] + at * w, col.data(), batch->num_rows * w);
        }
      }
      at += batch->num_rows;
    }
    if (at != rows) return Status::Corruption("the scan yields fewer rows than the manifest counts");
    return Status::OK();
  }();
  VIGIL_RETURN_IF_ERROR(st);
  py::list names, values, validity;
  for (size_t c = 0; c < fields.size(); ++c) {
    names.append(fields[c].name);
    if (fields[c].type.id == TypeId::kString) {
      py::list text;
      for (size_t r = 0; r < strings[c].size(); ++r) {
        std::string_view s = strings[c].StringAt(r);
        text.append(strings[c].IsValid(r) ? py::object(py::str(s.data(), s.size())) : py::object(py::none()));
      }
      values.append(std::move(text));
    } else {
      values.append(arrays[c]);
    }
    if (valid[c].empty()) {
      validity.append(py::none());
    } else {
      validity.append(py::array_t<uint8_t>(static_cast<py::ssize_t>(rows), valid[c].data()));
    }
  }
  return py::tuple(py::make_tuple(std::move(names), std::move(values), std::move(validity), ds.version()));
}

}  // namespace vigil::python
