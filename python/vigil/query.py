"""Search builders: `table.search(vector)` and `table.search("text", query_type="fts")` make
the same SELECT over vector_search / fts_search that SQL users write, with the query
vector bound as its FLOAT32 bytes."""

import json

import numpy as np

from ._columns import from_stored, identifier
from .errors import InvalidArgumentError

_MAX_CACHED_TEXTS = 64  # SELECT texts kept per table, by query shape


def _literal(text):
    return "'" + text.replace("'", "''") + "'"


class _Query:

    def __init__(self, table):
        self._table = table
        self._limit = 10
        self._where = None
        self._prefilter = True
        self._columns = None

    def limit(self, k):
        """At most `k` results (default 10)."""
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise InvalidArgumentError("INVALID_ARGUMENT", f"limit must be a positive integer, not {k!r}")
        self._limit = k
        return self

    def where(self, condition, prefilter=True):
        """A SQL condition on the table's columns. With `prefilter` (the default) it is applied before
        the top k, so k rows come back when k rows match; otherwise to the top k."""
        self._where = condition
        self._prefilter = bool(prefilter)
        return self

    def select(self, columns):
        """Only these columns (and the score)."""
        self._columns = [identifier(c, "column") for c in columns]
        return self

    def _select_list(self, extra):
        names = self._columns if self._columns is not None else [f.name for f in self._table.schema]
        return ", ".join(names + [extra])

    def _shape(self):
        """What the SELECT text depends on besides the query itself."""
        return (type(self), self._limit, None if self._where is None else str(self._where), self._prefilter,
                None if self._columns is None else tuple(self._columns))

    def _wrap(self, inner, extra, prefilter_allowed):
        if self._where is None:
            return inner
        if self._prefilter and prefilter_allowed:
            return f"{inner} WHERE {self._where}"
        return f"SELECT * FROM ({inner} LIMIT {self._limit}) WHERE {self._where} ORDER BY {extra}"

    def to_list(self):
        """The results as dicts (vectors as numpy arrays)."""
        result, names = self._run()
        return [dict(zip(names, row)) for row in self._converted(result, names)]

    def to_numpy(self):
        """The results as a numpy structured array (vectors as sub-arrays)."""
        result, names = self._run()
        fields = self._table.fields
        dtypes = []
        columns = list(zip(*self._converted(result, names))) if result.rows else [[] for _ in names]
        arrays = []
        for name, values in zip(names, columns):
            f = fields.get(name)
            if f is not None and f.kind in ("VECTOR32", "VECTOR16") and all(v is not None for v in values):
                arr = np.asarray(values, dtype=np.float32 if f.kind == "VECTOR32" else np.float16)
                arr = arr.reshape(len(values), f.dim)
                dtypes.append((name, arr.dtype, (f.dim,)))
            else:
                arr = _column(f, values)
                dtypes.append((name, arr.dtype))
            arrays.append(arr)
        out = np.empty(len(result.rows), dtype=dtypes)
        for name, arr in zip(names, arrays):
            out[name] = arr
        return out

    def explain(self):
        """The plan the engine chooses (EXPLAIN of the same SELECT), as text."""
        sql, _ = self._sql(inline=True)
        return "\n".join(" ".join(str(v) for v in row) for row in self._table._connection.sql("EXPLAIN " + sql).rows)

    def to_sql(self):
        """The SELECT this query runs, with its query inline."""
        return self._sql(inline=True)[0]

    def _run(self):
        connection = self._table._connection
        if connection.remote:
            result = connection.sql(self._sql(inline=True)[0])
        else:
            sql, params = self._sql(inline=False)
            result = connection._select(sql, params)
        return result, result.columns

    def _converted(self, result, names):
        """The rows with typed cells: vectors as FLOAT32 arrays (SQL reads every vector so), DATE and
        TIMESTAMP as datetime64, BOOL as bool."""
        fields = self._table.fields
        typed = [(i, _CELL[fields[n].kind]) for i, n in enumerate(names) if n in fields and fields[n].kind in _CELL]
        if not typed:
            return result.rows
        return [_typed_row(row, typed) for row in result.rows]


def _typed_row(row, typed):
    row = list(row)
    for i, convert in typed:
        if row[i] is not None:
            row[i] = convert(row[i])
    return tuple(row)


def _vector(cell):
    if isinstance(cell, bytes):  # an expression's BLOB: its FLOAT32 elements
        return np.frombuffer(cell, dtype="<f4")
    return np.asarray(cell, dtype=np.float32)


_CELL = {
    "VECTOR32": _vector,
    "VECTOR16": _vector,
    "DATE": lambda days: np.datetime64(days, "D"),
    "TIMESTAMP": lambda micros: np.datetime64(micros, "us"),
    "BOOL": bool,
}


def _column(field, values):
    if field is None or None in values or field.kind in ("STRING", "DECIMAL"):
        if field is None and None not in values and all(isinstance(v, float) for v in values):
            return np.asarray(values, dtype=np.float64)
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    return from_stored(field, np.asarray(values), None)


class VectorQuery(_Query):
    """A nearest-neighbour search; see Table.search."""

    def __init__(self, table, vector, column):
        super().__init__(table)
        self._column = column
        field = table.fields.get(column)
        if field is None or not field.kind.startswith("VECTOR"):
            raise InvalidArgumentError("INVALID_ARGUMENT", f"table {table.name} has no vector column {column!r}")
        dim = field.dim
        q = np.asarray(vector)
        if q.dtype.kind not in "iuf" or q.dtype.kind == "b" or q.ndim != 1 or q.shape[0] != dim:
            raise InvalidArgumentError("INVALID_ARGUMENT", f"the query vector must be {dim} numbers for column "
                                       f"'{column}', got dtype {q.dtype} and shape {q.shape}")
        if not np.isfinite(q).all():
            raise InvalidArgumentError("INVALID_ARGUMENT", "the query vector has a non-finite element")
        self._vector = np.ascontiguousarray(q, dtype="<f4")
        self._options = {}

    def nprobes(self, n):
        """IVF partitions to search (the index's default otherwise)."""
        self._options["nprobes"] = int(n)
        return self

    def refine_factor(self, r):
        """Re-ranks k x r candidates with the stored vectors."""
        self._options["refine_factor"] = int(r)
        return self

    def bypass_vector_index(self):
        """An exact search over every row."""
        self._options["use_index"] = False
        return self

    def _sql(self, inline):
        params = [] if inline else [self._vector.tobytes()]
        if inline:
            return self._text(_literal("[" + ", ".join(repr(float(x)) for x in self._vector) + "]")), params
        shape = (self._shape(), self._column, tuple(sorted(self._options.items())))
        texts = self._table._sql_texts
        text = texts.get(shape)
        if text is None:
            if len(texts) >= _MAX_CACHED_TEXTS:
                texts.clear()
            text = texts[shape] = self._text("?")
        return text, params

    def _text(self, vector):
        options = f", {_literal(json.dumps(self._options))}" if self._options else ""
        inner = (f"SELECT {self._select_list('_distance')} FROM vector_search("
                 f"{_literal(self._table.name)}, {_literal(self._column)}, {vector}, {self._limit}{options})")
        return self._wrap(inner, "_distance", True)


class FtsQuery(_Query):
    """A full-text search; see Table.search."""

    def __init__(self, table, text, column):
        super().__init__(table)
        self._text = str(text)
        self._column = column

    def _sql(self, inline):
        text = _literal(self._text) if inline else "?"
        inner = (f"SELECT {self._select_list('_score')} FROM fts_search("
                 f"{_literal(self._table.name)}, {_literal(self._column)}, {text}, {self._limit})")
        params = [] if inline else [self._text]
        return self._wrap(inner, "_score DESC", False), params
