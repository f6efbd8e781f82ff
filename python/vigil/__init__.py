"""Vigil for Python: versioned tables with crash-safe secondary indexes.

    import vigil, numpy as np
    db = vigil.connect("/tmp/root")                       # an embedded root, created when missing
    t = db.create_table("docs", {"id": np.arange(1000), "emb": np.random.rand(1000, 32)})
    t.create_index("emb", num_partitions=16, num_sub_vectors=8, wait=True)
    print(t.search(np.random.rand(32)).nprobes(8).limit(5).to_list())
"""

import os
import shutil
import subprocess
import threading

from . import _columns, _vigil
from .errors import (AlreadyExistsError, CommitConflictError, CorruptionError, DeadlineExceededError, Error, FailedPreconditionError,
                     FencedError, InvalidArgumentError, NotFoundError, OutcomeUnknownError, PermissionDeniedError,
                     RateLimitedError, ResourceExhaustedError, UnauthenticatedError, from_code)
from .job import Job
from .query import FtsQuery, VectorQuery
from .remote import RemoteSession
from .table import Table

__all__ = [
    "connect", "Connection", "Result", "Table", "Job", "VectorQuery", "FtsQuery", "Error", "AlreadyExistsError",
    "CommitConflictError", "CorruptionError", "DeadlineExceededError", "FailedPreconditionError", "FencedError", "InvalidArgumentError",
    "NotFoundError", "OutcomeUnknownError", "PermissionDeniedError", "RateLimitedError", "ResourceExhaustedError", "UnauthenticatedError"
]


def _raise_typed(e):
    code, subcode, message = e.args
    raise from_code(code, message, subcode) from None


class Result:
    """One statement's result: `columns`, `rows` (tuples), `message`, `jobs` it admitted."""

    def __init__(self, columns, rows, message, jobs, warnings):
        self.columns = list(columns)
        self.rows = rows
        self.message = message
        self.jobs = list(jobs)
        self.warnings = list(warnings)

    def to_list(self):
        """The rows as dicts keyed by column name."""
        return [dict(zip(self.columns, row)) for row in self.rows]

    def __len__(self):
        return len(self.rows)


def _vigil_binary():
    """The `vigil` executable that starts the root's leader: $VIGIL_BINARY, the one this package
    was built or installed with, or `vigil` on PATH."""
    if os.environ.get("VIGIL_BINARY"):
        return os.environ["VIGIL_BINARY"]
    try:
        from ._paths import VIGIL_BINARY
        if os.access(VIGIL_BINARY, os.X_OK):
            return VIGIL_BINARY
    except ImportError:
        pass
    return shutil.which("vigil") or ""


def _url_scheme(path):
    """The lower-case scheme of `path` when it is a URL (`scheme://...`), else None."""
    if not isinstance(path, str):
        return None
    head, sep, _ = path.partition("://")
    if not sep or not head or not (head[0].isalpha() and all(c.isalnum() or c in "+.-" for c in head)):
        return None
    return head.lower()


class Connection:
    """An embedded root; see `connect`. Tables are `database.table`; a bare name is in `database`.
    A Connection may be shared by threads: each thread runs on a session of its own."""

    def __init__(self, path, create=True, database="default", start_leader=True, token=None, timeout=300):
        self.database = _columns.identifier(database, "database")
        scheme = _url_scheme(path)
        if scheme not in (None, "http", "https"):
            raise InvalidArgumentError("INVALID_ARGUMENT", f"connect({path!r}): a {scheme}:// URL is neither a root "
                                       "directory nor a vigil serve URL (http:// or https://)")
        self.remote = scheme is not None
        if self.remote and not path.lower().startswith(scheme + "://"):
            raise InvalidArgumentError("INVALID_ARGUMENT", f"connect({path!r}): a URL is scheme://host:port")
        if self.remote:
            path = scheme + path[len(scheme):]  # the scheme as http.client reads it, lower-case
        self.path = path
        self._token, self._timeout = token, timeout
        if self.remote and not token:
            raise InvalidArgumentError("INVALID_ARGUMENT", f"connecting to {path} needs token=")
        self._vigil = _vigil_binary() if start_leader and not self.remote else ""
        self._local = threading.local()
        self._local.session = self._open(create)

    def _open(self, create):
        if self.remote:
            session = RemoteSession(self.path, self._token, self._timeout)
            session.execute("SHOW DATABASES")  # the server answers and the token is valid, now
            return session
        try:
            return _vigil.Session.open(self.path, create, self._vigil)
        except _vigil.VigilError as e:
            _raise_typed(e)

    def _session(self):
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = self._open(False)
        return session

    def _call(self, method, *args):
        try:
            return getattr(self._session(), method)(*args)
        except _vigil.VigilError as e:
            _raise_typed(e)

    def sql(self, text):
        """Executes one statement; raises a vigil.Error subclass when it fails."""
        return Result(*self._call("execute", text))

    def _select(self, text, params):
        return Result(*self._call("select", text, list(params)))

    def _split(self, name):
        parts = name.split(".") if isinstance(name, str) else [name]
        if len(parts) == 1:
            return self.database, _columns.identifier(parts[0], "table")
        if len(parts) == 2:
            return _columns.identifier(parts[0], "database"), _columns.identifier(parts[1], "table")
        raise InvalidArgumentError("INVALID_ARGUMENT", f"table {name!r}: give `table` or `database.table`")

    def table_names(self, database=None):
        """The tables of `database` (the connection's by default)."""
        db = _columns.identifier(database or self.database, "database")
        try:
            return sorted(row[0] for row in self.sql(f"SHOW TABLES FROM {db}").rows)
        except NotFoundError:
            return []

    def open_table(self, name):
        """The table `name`; NotFoundError when it does not exist."""
        db, table = self._split(name)
        t = Table(self, db, table)
        t.schema  # NotFoundError now
        return t

    def create_table(self, name, data=None, schema=None, mode="create", exist_ok=False,
                     batch_rows=16384):
        """Creates the table `name` with `schema` (a dict or a list of (column, SQL type) pairs, e.g.
        {"id": "BIGINT NOT NULL", "emb": "VECTOR(FLOAT32, 128)"}) or one inferred from `data` (numpy
        dtypes; 2-D numbers are vectors; a column without None or masked values is NOT NULL), then
        adds `data`. `mode="overwrite"` drops an
        existing table first; `exist_ok` opens an existing one."""
        db, table = self._split(name)
        if mode not in ("create", "overwrite"):
            raise InvalidArgumentError("INVALID_ARGUMENT", f"mode {mode!r}: 'create' or 'overwrite'")
        if schema is None and data is None:
            raise InvalidArgumentError("INVALID_ARGUMENT", "create_table needs a schema or data")
        columns = _columns.as_columns(data) if data is not None else None
        if schema is None:
            schema = {}
            for column, values in columns.items():
                nullable = _columns.has_nulls(values)
                schema[column] = _columns.infer_type(column, values) + ("" if nullable else " NOT NULL")
        pairs = list(schema.items()) if isinstance(schema, dict) else list(schema)
        for column, sql_type in pairs:
            _columns.identifier(column, "column")
            if not isinstance(sql_type, str) or any(c in sql_type for c in ";'\"`-/"):
                raise InvalidArgumentError("INVALID_ARGUMENT", f"column '{column}': type {sql_type!r} is not a type")
        if db not in (row[0] for row in self.sql("SHOW DATABASES").rows):
            self.sql(f"CREATE DATABASE IF NOT EXISTS {db}")
        if mode == "overwrite":
            self.sql(f"DROP TABLE IF EXISTS {db}.{table}")
        exists = "IF NOT EXISTS " if exist_ok else ""
        self.sql(f"CREATE TABLE {exists}{db}.{table} (" + ", ".join(f"{c} {t}" for c, t in pairs) + ")")
        t = Table(self, db, table)
        if columns is not None:
            t.add(columns, batch_rows=batch_rows)
        return t

    def drop_table(self, name, missing_ok=False):
        db, table = self._split(name)
        self.sql(f"DROP TABLE {'IF EXISTS ' if missing_ok else ''}{db}.{table}")

    def stop_leader(self, timeout=60):
        """Stops the root's leader (`vigil supervise --stop`): it lets running builds finish first.
        A server's leader is the server's own: nothing to stop from here."""
        if not self._vigil:
            return
        done = subprocess.run([self._vigil, "--root", self.path, "supervise", "--stop", "--stop-timeout", str(int(timeout))],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise Error("INTERNAL", f"vigil supervise --stop failed: {done.stdout}{done.stderr}".strip())

    def job(self, job_id):
        """The index job `job_id`."""
        return Job(self, job_id)


def connect(path, create=True, database="default", start_leader=True, token=None, timeout=300):
    """Opens the embedded root at `path` (created when missing and `create`). Index jobs run in the
    root's leader, `vigil supervise`, which a statement admitting or waiting for a job starts when
    none runs (unless `start_leader` is False).

    With `path` an http:// or https:// URL, connects to that `vigil serve` server as the user of
    the bearer `token` instead, with the same API (requests time out after `timeout` seconds);
    a checked-out version is read on the server's root only."""
    return Connection(path, create, database, start_leader, token, timeout)
