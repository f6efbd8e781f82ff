"""Vigil for Python: versioned tables with crash-safe secondary indexes.

    import vigil
    db = vigil.connect("/tmp/root")          # an embedded root, created when missing
    db.sql("CREATE TABLE d.t (id INTEGER, v FLOAT32[4])")
"""

from . import _vigil
from .errors import (AlreadyExistsError, CommitConflictError, CorruptionError, Error, FailedPreconditionError,
                     FencedError, InvalidArgumentError, NotFoundError, OutcomeUnknownError, PermissionDeniedError,
                     ResourceExhaustedError, from_code)

__all__ = [
    "connect", "Connection", "Result", "Error", "AlreadyExistsError", "CommitConflictError", "CorruptionError",
    "FailedPreconditionError", "FencedError", "InvalidArgumentError", "NotFoundError", "OutcomeUnknownError",
    "PermissionDeniedError", "ResourceExhaustedError"
]


def _call(fn, *args):
    try:
        return fn(*args)
    except _vigil.VigilError as e:
        code, message = e.args
        raise from_code(code, message) from None


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


class Connection:
    """An embedded root; see `connect`."""

    def __init__(self, path, create=True):
        self.path = path
        self._session = _call(_vigil.Session.open, path, create)

    def sql(self, text):
        """Executes one statement; raises a vigil.Error subclass when it fails."""
        return Result(*_call(self._session.execute, text))


def connect(path, create=True):
    """Opens the embedded root at `path` (created when missing and `create`)."""
    return Connection(path, create)
