"""Vigil's typed errors as Python exceptions, one class per status code."""

import re


class Error(Exception):
    """A failed Vigil call: `code` is Vigil's typed code (e.g. "INVALID_ARGUMENT")."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class InvalidArgumentError(Error):
    """The request was malformed; nothing changed."""


class NotFoundError(Error):
    """What the request names does not exist."""


class AlreadyExistsError(Error):
    """What the request creates exists already."""


class FencedError(Error):
    """An index name is held by a job that may still commit (INDEX_FENCED)."""


class FailedPreconditionError(Error):
    """The state does not allow the request (e.g. a job no longer runs its attempt)."""


class PermissionDeniedError(Error):
    """The principal lacks the privilege."""


class UnauthenticatedError(Error):
    """The server did not accept the bearer token (UNAUTHENTICATED)."""


class CorruptionError(Error):
    """A stored file is corrupt; nothing older was answered instead."""


class CommitConflictError(Error):
    """Another writer committed first; nothing of this request was committed."""


class OutcomeUnknownError(Error):
    """Whether the request took effect cannot be known yet (OUTCOME_UNKNOWN)."""


class DeadlineExceededError(Error, TimeoutError):
    """A wait or a statement ran out of time (DEADLINE_EXCEEDED); also a TimeoutError."""


class ResourceExhaustedError(Error):
    """A bound was reached; the request must be narrowed."""


_BY_CODE = {
    "INVALID_ARGUMENT": InvalidArgumentError,
    "NOT_FOUND": NotFoundError,
    "ALREADY_EXISTS": AlreadyExistsError,
    "INDEX_FENCED": FencedError,
    "FAILED_PRECONDITION": FailedPreconditionError,
    "PERMISSION_DENIED": PermissionDeniedError,
    "UNAUTHENTICATED": UnauthenticatedError,
    "CORRUPTION": CorruptionError,
    "COMMIT_CONFLICT": CommitConflictError,
    "OUTCOME_UNKNOWN": OutcomeUnknownError,
    "RESOURCE_EXHAUSTED": ResourceExhaustedError,
    "DEADLINE_EXCEEDED": DeadlineExceededError,
}


# A typed sub-code leading a message ("INDEX_FENCED: index 'x' ..."), as the HTTP API reads it.
_SUBCODE = re.compile(r"^([A-Z0-9_]{1,64}): ")


def from_code(code, message):
    """The exception for Vigil's `code`, or for the sub-code leading `message` when it has its own
    class (e.g. INDEX_FENCED); Error for a code without one."""
    sub = _SUBCODE.match(message)
    if sub and sub.group(1) in _BY_CODE:
        return _BY_CODE[sub.group(1)](sub.group(1), message)
    return _BY_CODE.get(code, Error)(code, message)
