"""Columns between Python values and a table's schema: inference of a schema from data,
normalization of numpy arrays, lists and dicts into the chunks the engine appends
(numpy_columns.h), and the conversion of read columns back to numpy."""

import datetime
import decimal
import re

import numpy as np

from .errors import InvalidArgumentError

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")

# Integer kinds: (numpy dtype, smallest, largest).
_INTEGERS = {
    "TINYINT": (np.int8, -2**7, 2**7 - 1),
    "SMALLINT": (np.int16, -2**15, 2**15 - 1),
    "INT": (np.int32, -2**31, 2**31 - 1),
    "BIGINT": (np.int64, -2**63, 2**63 - 1),
}
_FLOATS = {"FLOAT": np.float32, "DOUBLE": np.float64}


def identifier(name, what="name"):
    """`name` when it is a plain identifier; InvalidArgumentError otherwise (names reach SQL text)."""
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise InvalidArgumentError("INVALID_ARGUMENT", f"{what} {name!r} is not an identifier "
                                   "(a letter or _, then letters, digits or _; at most 128)")
    return name


class Field:
    """One column of a table: `name`, `kind` (BOOL, TINYINT.. BIGINT, FLOAT, DOUBLE, STRING, DATE,
    TIMESTAMP, DECIMAL, VECTOR32, VECTOR16), `nullable`, `dim`, `precision`, `scale` and `type`
    (its SQL spelling)."""

    def __init__(self, name, kind, nullable, dim, precision, scale, max_length, type_text):
        self.name, self.kind, self.nullable = name, kind, nullable
        self.dim, self.precision, self.scale, self.max_length, self.type = dim, precision, scale, max_length, type_text

    def __repr__(self):
        return f"{self.name} {self.type}{'' if self.nullable else ' NOT NULL'}"


def _bad(field, what):
    return InvalidArgumentError("INVALID_ARGUMENT", f"column '{field.name}' ({field.type}): {what}")


def _nulls(values):
    """(values with None replaced, validity uint8 array or None) of a list or masked array."""
    if isinstance(values, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(values)
        if mask.ndim > 1:
            mask = mask.reshape(mask.shape[0], -1).all(axis=1)
        return values.filled(0) if mask.any() else values.data, ((~mask).astype(np.uint8) if mask.any() else None)
    if isinstance(values, np.ndarray):
        if values.dtype == object:
            none = np.array([v is None for v in values], dtype=bool)
            if none.any():
                return list(values), (~none).astype(np.uint8)
        return values, None
    values = list(values)
    none = [v is None for v in values]
    if not any(none):
        return values, None
    return values, np.array([not n for n in none], dtype=np.uint8)


def _fill(values, valid, filler):
    """`values` (a list) with `filler` where `valid` is 0."""
    if valid is None or isinstance(values, np.ndarray):
        return values
    return [filler if v is None else v for v in values]


def _integers(field, arr):
    dtype, lo, hi = _INTEGERS[field.kind]
    if arr.dtype.kind == "b" or arr.dtype.kind not in "iu":
        raise _bad(field, f"expects integers, got dtype {arr.dtype}")
    if arr.size and (int(arr.min()) < lo or int(arr.max()) > hi):
        row = int(np.argmax((arr < lo) | (arr > hi)))
        raise _bad(field, f"row {row}: {arr[row]} is out of range")
    return np.ascontiguousarray(arr, dtype=dtype)


def _scalar(field, values, valid):
    """One fixed-width column as a contiguous array of its stored width."""
    kind = field.kind
    if kind in _INTEGERS:
        return _integers(field, np.asarray(_fill(values, valid, 0)))
    if kind in _FLOATS:
        arr = np.asarray(_fill(values, valid, 0.0))
        if arr.dtype.kind not in "iuf" or arr.dtype.kind == "b":
            raise _bad(field, f"expects numbers, got dtype {arr.dtype}")
        out = np.ascontiguousarray(arr, dtype=_FLOATS[kind])
        if kind == "FLOAT" and arr.dtype.kind == "f" and (np.isinf(out) & np.isfinite(arr)).any():
            raise _bad(field, f"row {int(np.argmax(np.isinf(out) & np.isfinite(arr)))}: out of range for FLOAT")
        return out
    if kind == "BOOL":
        arr = np.asarray(_fill(values, valid, False))
        if arr.dtype != np.bool_:
            raise _bad(field, f"expects booleans, got dtype {arr.dtype}")
        return np.ascontiguousarray(arr).view(np.uint8)
    if kind == "DATE":
        arr = np.asarray(_fill(values, valid, datetime.date(1970, 1, 1)))
        if arr.dtype.kind == "M" or arr.dtype == object:
            arr = arr.astype("datetime64[D]").astype(np.int64)
        field_int = Field(field.name, "INT", True, 0, 0, 0, 0, field.type)
        return _integers(field_int, arr)
    if kind == "TIMESTAMP":
        arr = np.asarray(_fill(values, valid, datetime.datetime(1970, 1, 1)))
        if arr.dtype.kind == "M" or arr.dtype == object:
            arr = arr.astype("datetime64[us]").astype(np.int64)
        return _integers(Field(field.name, "BIGINT", True, 0, 0, 0, 0, field.type), arr)
    if kind == "DECIMAL":
        return _decimals(field, _fill(values, valid, 0))
    raise _bad(field, "has a type this package cannot write")


def _decimals(field, values):
    scale, limit = decimal.Decimal(10)**field.scale, 10**field.precision
    out = np.empty(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        if isinstance(v, (float, np.floating)) and not np.isfinite(v):
            raise _bad(field, f"row {i}: {v} is not a number")
        if not isinstance(v, (int, float, decimal.Decimal, np.integer, np.floating)) or isinstance(v, bool):
            raise _bad(field, f"row {i}: expects a number, got {type(v).__name__}")
        unscaled = (decimal.Decimal(str(v)) * scale).to_integral_value(rounding=decimal.ROUND_HALF_EVEN)
        if abs(unscaled) >= limit:
            raise _bad(field, f"row {i}: {v} does not fit")
        out[i] = int(unscaled)
    return out


def _vectors(field, values, valid):
    dtype = np.float32 if field.kind == "VECTOR32" else np.float16
    if valid is not None and not isinstance(values, np.ndarray):
        values = [np.zeros(field.dim) if v is None else v for v in values]
    try:
        arr = np.asarray(values)
    except ValueError:
        raise _bad(field, "vectors of different lengths") from None
    if arr.dtype == object:
        raise _bad(field, "vectors of different lengths or of non-numbers")
    if arr.ndim != 2 or arr.shape[1] != field.dim:
        raise _bad(field, f"expects an array of shape (rows, {field.dim}), got shape {arr.shape}")
    if arr.dtype.kind not in "iuf" or arr.dtype.kind == "b":
        raise _bad(field, f"expects numbers, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=dtype)


def _strings(field, values, valid):
    if isinstance(values, np.ndarray) and values.dtype.kind not in "UO":
        raise _bad(field, f"expects strings, got dtype {values.dtype}")
    encoded = []
    for i, v in enumerate(values):
        if v is None:
            encoded.append(b"")
        elif isinstance(v, str):
            encoded.append(v.encode("utf-8", "surrogatepass"))
        else:
            raise _bad(field, f"row {i}: expects a string, got {type(v).__name__}")
    offsets = np.zeros(len(encoded) + 1, dtype=np.uint64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def normalize(field, values):
    """(data, offsets, valid) of one column for the engine, checked against `field`."""
    values, valid = _nulls(values)
    if field.kind == "STRING":
        data, offsets = _strings(field, values, valid)
        return data, offsets, valid
    if field.kind in ("VECTOR32", "VECTOR16"):
        return _vectors(field, values, valid), None, valid
    return _scalar(field, values, valid), None, valid


def _length(values):
    return values.shape[0] if isinstance(values, np.ndarray) else len(values)


def as_columns(data):
    """A dict of column name -> values from a dict, a list of dicts or a numpy structured array."""
    if isinstance(data, dict):
        return dict(data)
    if isinstance(data, np.ndarray) and data.dtype.names:
        return {name: data[name] for name in data.dtype.names}
    if isinstance(data, (list, tuple)):
        if not all(isinstance(row, dict) for row in data):
            raise InvalidArgumentError("INVALID_ARGUMENT", "rows must be dicts of column name -> value")
        names = []
        for row in data:
            for name in row:
                if name not in names:
                    names.append(name)
        return {name: [row.get(name) for row in data] for name in names}
    raise InvalidArgumentError("INVALID_ARGUMENT", "data must be a dict of columns, a list of dicts or a numpy "
                               f"structured array, not {type(data).__name__}")


def chunks(fields, data, table, batch_rows):
    """The chunks (rows, [(data, offsets, valid) per field]) of `data` for a table of `fields`,
    `batch_rows` rows each; InvalidArgumentError names an unknown or missing column."""
    columns = as_columns(data)
    by_name = {f.name.lower(): f for f in fields}
    for name in columns:
        if not isinstance(name, str) or name.lower() not in by_name:
            raise InvalidArgumentError("INVALID_ARGUMENT", f"table {table} has no column {name!r}")
    given = {name.lower(): values for name, values in columns.items()}
    lengths = {name: _length(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        raise InvalidArgumentError("INVALID_ARGUMENT", f"columns of different lengths: {lengths}")
    rows = next(iter(lengths.values()), 0)
    for f in fields:
        if f.name.lower() not in given:
            if not f.nullable:
                raise InvalidArgumentError("INVALID_ARGUMENT", f"column '{f.name}' is NOT NULL and was not given")
            given[f.name.lower()] = [None] * rows
    for start in range(0, rows, batch_rows):
        end = min(rows, start + batch_rows)
        yield end - start, [normalize(f, given[f.name.lower()][start:end]) for f in fields]


def has_nulls(values):
    """Whether `values` holds None or masked entries."""
    return _nulls(values)[1] is not None


def infer_type(name, values):
    """The SQL type of a new column from its values."""
    values, valid = _nulls(values)
    if isinstance(values, list):
        present = [v for v in values if v is not None]
        if present and all(isinstance(v, str) for v in present):
            return "STRING"
        if present and all(isinstance(v, (list, tuple, np.ndarray)) for v in present):
            arr = np.asarray(present)
            if arr.ndim == 2 and arr.dtype.kind in "iuf":
                return f"VECTOR(FLOAT32, {arr.shape[1]})"
        if present and all(isinstance(v, decimal.Decimal) for v in present):
            raise InvalidArgumentError("INVALID_ARGUMENT", f"column '{name}': give a schema for DECIMAL values")
        values = np.asarray(present)
    arr = np.asarray(values)
    if arr.ndim == 2 and arr.dtype.kind in "iuf" and arr.dtype.kind != "b":
        return f"VECTOR({'FLOAT16' if arr.dtype == np.float16 else 'FLOAT32'}, {arr.shape[1]})"
    if arr.ndim != 1:
        raise InvalidArgumentError("INVALID_ARGUMENT", f"column '{name}': cannot infer a type from shape {arr.shape}")
    kind = arr.dtype.kind
    if kind == "b":
        return "BOOL"
    if kind == "i":
        return {1: "TINYINT", 2: "SMALLINT", 4: "INT", 8: "BIGINT"}[arr.dtype.itemsize]
    if kind == "u":
        return {1: "SMALLINT", 2: "INT", 4: "BIGINT", 8: "BIGINT"}[arr.dtype.itemsize]
    if kind == "f":
        return "FLOAT" if arr.dtype == np.float32 else "DOUBLE"
    if kind in "UO" and all(isinstance(v, str) for v in arr):
        return "STRING"
    if kind == "M":
        return "DATE" if np.datetime_data(arr.dtype)[0] in ("D", "W", "M", "Y") else "TIMESTAMP"
    raise InvalidArgumentError("INVALID_ARGUMENT", f"column '{name}': cannot infer a type from dtype {arr.dtype}")


def from_stored(field, values, valid):
    """A read column (stored width) as numpy: DATE datetime64[D], TIMESTAMP datetime64[us], DECIMAL
    Decimal objects, strings objects; a column holding NULL becomes an object array with None."""
    if field.kind == "DATE":
        values = values.astype("datetime64[D]")
    elif field.kind == "TIMESTAMP":
        values = values.view("datetime64[us]")
    elif field.kind == "DECIMAL":
        values = np.array([decimal.Decimal(int(v)).scaleb(-field.scale) for v in values], dtype=object)
    elif field.kind == "STRING":
        out = np.empty(len(values), dtype=object)
        out[:] = values
        values = out
    if valid is None:
        return values
    if values.ndim == 2:
        out = np.empty(values.shape[0], dtype=object)
        for i in range(values.shape[0]):
            out[i] = values[i] if valid[i] else None
        return out
    out = values.astype(object)
    out[valid == 0] = None
    return out
