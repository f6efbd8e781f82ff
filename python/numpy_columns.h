// Columns between numpy and Vigil for the Python module: a RecordBatchReader over
// chunks of numpy buffers that the vigil package prepares (vigil/_columns.py), and
// a columnar read of a table version into numpy arrays. Buffers are copied once,
// into the column (in) or into the new array (out); no value passes through a Python
// object except strings. Thread safety: the reader takes the GIL only to pull the
// next chunk; ReadColumns must be called with the GIL held and releases it to scan.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "vigil/common/status.h"
#include "vigil/storage/column.h"
#include "vigil/storage/dataset.h"

namespace vigil::python {

namespace py = pybind11;

// What a chunk reader leaves for its caller: the rows it read, and a Python exception
// raised while pulling a chunk, to be raised again once the engine call it interrupted
// has returned.
struct PendingPythonError {
  std::optional<py::error_already_set> error;
  uint64_t rows = 0;
};

// A reader over `chunks`, an iterator of (rows, fields): one (data, offsets, valid) per
// field of `schema`, in order. data holds the values at the stored width (a vector's
// elements row-major; a string's UTF-8 bytes); offsets (uint64, rows + 1) only for
// strings; valid (uint8, 1 = present) or None. Values are checked as INSERT checks
// them (UTF-8, VARCHAR length, finite vector elements, NOT NULL), errors naming the
// column and the row. A Python exception from `chunks` ends the read with an error and
// is kept in `pending`.
std::unique_ptr<RecordBatchReader> MakeChunkReader(SchemaPtr schema, py::iterator chunks, PendingPythonError* pending);

// Every live row of `ds` in scan order: (names, arrays, valids), one array per column
// of `columns` (every column when empty) at its stored width (DATE int32 days,
// TIMESTAMP int64 microseconds, DECIMAL int64 unscaled, vectors 2-D, strings a list of
// str), a uint8 validity array where the column holds a NULL (None otherwise), and the
// version read. InvalidArgument names a column the table does not have.
Result<py::tuple> ReadColumns(const Dataset& ds, const std::vector<std::string>& columns);

}  // namespace vigil::python
