"""A table of a Vigil root: rows in and out as numpy, versions, indexes as jobs, searches."""

import datetime

import numpy as np

from . import _columns
from .errors import FailedPreconditionError, InvalidArgumentError
from .job import Job
from .query import FtsQuery, VectorQuery

_DEFAULT_BATCH_ROWS = 16384  # the ingest batch; 65,536 x 128-d vectors hit the allocator's mmap threshold


def _quote(text):
    return "'" + str(text).replace("'", "''") + "'"


class Table:
    """`database.table` of a connection; `checkout(version)` gives a read-only view of a version."""

    def __init__(self, connection, database, name, version=None):
        self._connection = connection
        self.database = database
        self.table = name
        self._version = version
        self._schema = None
        self._fields = None
        self._sql_texts = {}  # a search's SELECT text by its shape (query.py)

    @property
    def name(self):
        """`database.table`, as SQL names it."""
        return f"{self.database}.{self.table}"

    @property
    def schema(self):
        """The table's fields (vigil Field objects: name, kind, nullable, dim, type)."""
        if self._schema is None:
            self._schema = [_columns.Field(*f) for f in self._connection._call("schema", self.database, self.table)]
            self._fields = {f.name: f for f in self._schema}
            self._sql_texts = {}
        return self._schema

    @property
    def fields(self):
        """The table's fields by name."""
        if self._schema is None:
            self.schema
        return self._fields

    @property
    def version(self):
        """The version this object reads: the newest, or the checked-out one."""
        return self._version if self._version is not None else self.list_versions()[-1]["version"]

    def list_versions(self):
        """Every version, oldest first: version, parent, timestamp (UTC), operation, rows, fragments."""
        out = []
        for version, parent, micros, operation, rows, fragments in self._connection._call(
                "versions", self.database, self.table):
            out.append({"version": version, "parent": parent, "operation": operation, "rows": rows,
                        "fragments": fragments,
                        "timestamp": datetime.datetime.fromtimestamp(micros / 1e6, datetime.timezone.utc)})
        return out

    def checkout(self, version):
        """A read-only view of `version` (to_numpy, to_list, count_rows, schema)."""
        view = Table(self._connection, self.database, self.table, int(version))
        view._read([])  # NotFoundError now for a version the table does not have
        return view

    def _writable(self, what):
        if self._version is not None:
            raise FailedPreconditionError("FAILED_PRECONDITION", f"{what}: version {self._version} of {self.name} "
                                          "is checked out read-only; use the table itself")

    # ---- rows ----

    def add(self, data, batch_rows=_DEFAULT_BATCH_ROWS):
        """Appends `data` (a dict of columns, a list of dicts or a numpy structured array) in one
        commit, streamed to the engine `batch_rows` at a time; returns the rows added. Nothing is
        committed when any value is refused (InvalidArgumentError names the column and row)."""
        self._writable("add")
        if batch_rows < 1:
            raise InvalidArgumentError("INVALID_ARGUMENT", "batch_rows must be positive")
        self._schema = None
        chunks = _columns.chunks(self.schema, data, self.name, batch_rows)
        return self._connection._call("append", self.database, self.table, chunks)

    def delete(self, where):
        """Deletes the rows where the SQL condition holds; returns how many."""
        self._writable("delete")
        message = self._connection.sql(f"DELETE FROM {self.name} WHERE {where}").message
        return int(message.split()[0])

    def count_rows(self, filter=None):
        """Live rows (where `filter`, a SQL condition, holds)."""
        if self._version is not None:
            if filter is not None:
                raise FailedPreconditionError("FAILED_PRECONDITION", "count_rows(filter) reads the newest version")
            return len(self._read([])[1][0]) if self.schema else 0
        where = f" WHERE {filter}" if filter is not None else ""
        return self._connection.sql(f"SELECT count(*) FROM {self.name}{where}").rows[0][0]

    def _read(self, columns):
        return self._connection._call("read", self.database, self.table, self._version, list(columns))

    def to_columns(self, columns=None):
        """Every live row as a dict of column name -> numpy array (vectors 2-D; DATE datetime64[D],
        TIMESTAMP datetime64[us]; a column holding NULL an object array with None)."""
        names, values, valid, _ = self._read(columns or [])
        fields = {f.name: f for f in self.schema}
        return {n: _columns.from_stored(fields[n], np.asarray(v) if not isinstance(v, list) else v, ok)
                for n, v, ok in zip(names, values, valid)}

    def to_numpy(self, columns=None):
        """Every live row as a numpy structured array (vectors as sub-arrays)."""
        cols = self.to_columns(columns)
        dtypes = []
        for name, arr in cols.items():
            dtypes.append((name, arr.dtype, arr.shape[1:]) if arr.ndim == 2 else (name, arr.dtype))
        rows = len(next(iter(cols.values()))) if cols else 0
        out = np.empty(rows, dtype=dtypes)
        for name, arr in cols.items():
            out[name] = arr
        return out

    def to_list(self, columns=None):
        """Every live row as a dict."""
        cols = self.to_columns(columns)
        names = list(cols)
        return [{n: cols[n][i] for n in names} for i in range(len(cols[names[0]]) if names else 0)]

    # ---- indexes ----

    def _index_job(self, result):
        if not result.jobs:
            return None
        job = Job(self._connection, result.jobs[0])
        return job

    def _create(self, name, column, using, properties, replace, wait, timeout):
        self._writable("create an index")
        _columns.identifier(column, "column")
        _columns.identifier(name, "index name")
        props = ""
        if properties:
            props = " PROPERTIES (" + ", ".join(f'"{k}" = {_quote(v)}' for k, v in properties.items()) + ")"
        verb = "CREATE OR REPLACE INDEX" if replace else "CREATE INDEX"
        job = self._index_job(self._connection.sql(f"{verb} {name} ON {self.name} ({column}) USING {using}{props}"))
        return job.wait(timeout) if wait and job is not None else job

    def create_index(self, column="vector", index_type="IVF_PQ", metric="l2", num_partitions=256,
                     num_sub_vectors=16, num_bits=8, name=None, replace=False, wait=False, timeout=None,
                     **properties):
        """Creates (or with `replace` replaces) a vector index on `column` as a durable job; returns
        its Job, FINISHED when `wait`. Other IVF_PQ properties (sample_rate, max_iterations) may be
        given by name."""
        if str(index_type).upper() != "IVF_PQ":
            raise InvalidArgumentError("INVALID_ARGUMENT", f"index_type {index_type!r}: vector indexes are IVF_PQ")
        props = {"index_type": "IVF_PQ", "metric": metric, "num_partitions": num_partitions,
                 "num_sub_vectors": num_sub_vectors, "num_bits": num_bits}
        props.update(properties)
        return self._create(name or f"{column}_idx", column, "ANN", props, replace, wait, timeout)

    def create_scalar_index(self, column, index_type="BTREE", name=None, replace=False, wait=False, timeout=None):
        """A BTREE or BITMAP index on `column`, as create_index."""
        kind = str(index_type).upper()
        if kind not in ("BTREE", "BITMAP"):
            raise InvalidArgumentError("INVALID_ARGUMENT", f"index_type {index_type!r}: BTREE or BITMAP")
        return self._create(name or f"{column}_idx", column, kind, {}, replace, wait, timeout)

    def create_fts_index(self, column, tokenizer="unicode61", name=None, replace=False, wait=False, timeout=None):
        """A full-text index on `column` (tokenizer unicode61, porter, ascii or trigram), as create_index."""
        return self._create(name or f"{column}_idx", column, "FTS", {"tokenizer": tokenizer}, replace, wait, timeout)

    def drop_index(self, name, wait=False, timeout=None):
        """Drops the index `name` as a job; returns it."""
        self._writable("drop an index")
        job = self._index_job(self._connection.sql(f"DROP INDEX {_columns.identifier(name, 'index name')} "
                                                   f"ON {self.name}"))
        return job.wait(timeout) if wait and job is not None else job

    def build_index(self, name, wait=False, timeout=None):
        """Indexes the rows the index `name` does not cover yet (BUILD INDEX) as a job; returns it."""
        self._writable("build an index")
        job = self._index_job(self._connection.sql(f"BUILD INDEX {_columns.identifier(name, 'index name')} "
                                                   f"ON {self.name}"))
        return job.wait(timeout) if wait and job is not None else job

    def optimize(self, wait=True, timeout=None):
        """BUILD INDEX for every index that does not cover every row; returns their jobs."""
        rows = self.count_rows()
        jobs = [self.build_index(i["name"]) for i in self.list_indices()
                if self.index_stats(i["name"])["num_indexed_rows"] < rows]
        return [j.wait(timeout) for j in jobs] if wait else jobs

    def list_indices(self):
        """The table's indexes: name, index_type, columns, properties."""
        result = self._connection.sql(f"SHOW INDEX FROM {self.name}")
        out = []
        for row in result.to_list():
            out.append({"name": row["Key_name"], "index_type": row["Index_type"], "columns": [row["Column_name"]],
                        "properties": row["Properties"]})
        return out

    def index_stats(self, name):
        """num_indexed_rows, num_unindexed_rows, index_type, physical_entries of the index `name` (None when
        the table has no such index)."""
        rows = self._connection.sql("SELECT IndexType, RowsIndexed, PhysicalEntryCount FROM vigil_indexes("
                                    f"{_quote(self.name)}) WHERE IndexName = {_quote(name)}").rows
        if not rows:
            return None
        index_type, indexed, segments = rows[0]
        total = self.count_rows()
        return {"index_type": index_type, "num_indexed_rows": indexed, "num_unindexed_rows": total - indexed,
                "physical_entries": segments}

    def wait_for_index(self, names, timeout=300):
        """Waits until every job on the indexes `names` is done; TimeoutError after `timeout` s."""
        for name in [names] if isinstance(names, str) else names:
            rows = self._connection.sql(
                f"SELECT JobId FROM vigil_index_jobs WHERE DatabaseName = {_quote(self.database)} AND TableName = "
                f"{_quote(self.table)} AND IndexName = {_quote(name)} "
                "AND State NOT IN ('FINISHED', 'FAILED', 'CANCELLED')").rows
            for (job_id,) in rows:
                Job(self._connection, job_id).wait(timeout)

    # ---- queries ----

    def search(self, query, vector_column=None, query_type=None, fts_column=None):
        """A search builder: nearest neighbours of a vector (numpy or list) in `vector_column` (the
        table's only vector column by default), or with a string (or query_type="fts") a full-text
        search of `fts_column` (the only column with an FTS index by default)."""
        if self._version is not None:
            raise FailedPreconditionError("FAILED_PRECONDITION", "search reads the newest version, not a checkout")
        if query_type == "fts" or (query_type is None and isinstance(query, str)):
            return FtsQuery(self, query, fts_column or self._only_fts_column())
        if query_type not in (None, "vector"):
            raise InvalidArgumentError("INVALID_ARGUMENT", f"query_type {query_type!r}: 'vector' or 'fts'")
        return VectorQuery(self, query, vector_column or self._only_vector_column())

    def _only_vector_column(self):
        vectors = [f.name for f in self.schema if f.kind.startswith("VECTOR")]
        if len(vectors) != 1:
            raise InvalidArgumentError("INVALID_ARGUMENT", f"table {self.name} has {len(vectors)} vector columns "
                                       f"{vectors}: name one with vector_column=")
        return vectors[0]

    def _only_fts_column(self):
        columns = [i["columns"][0] for i in self.list_indices() if i["index_type"] == "FTS"]
        if len(columns) != 1:
            raise InvalidArgumentError("INVALID_ARGUMENT", f"table {self.name} has {len(columns)} FTS indexes: "
                                       "name the column with fts_column=")
        return columns[0]

    def __len__(self):
        return self.count_rows()

    def __repr__(self):
        at = f" @ version {self._version}" if self._version is not None else ""
        return f"Table({self.name}{at})"
