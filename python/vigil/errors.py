"""Vigil's typed errors as Python exceptions, one class per status code."""


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


class RateLimitedError(Error):
    """The server refused this user's request for its rate (`[server] requests_per_second_per_user`) before
    doing anything: retry after `retry_after` seconds (under the same Idempotency-Key, the retry runs it)."""

    retry_after = 1


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
    "RATE_LIMITED": RateLimitedError,
}


def from_code(code, message, subcode=""):
    """The exception for Vigil's `code`, or for the typed `subcode` leading `message` (INDEX_FENCED,
    OUTCOME_UNKNOWN, ...; the engine and the server name it) when that has its own class; Error for
    a code without one."""
    if subcode in _BY_CODE:
        return _BY_CODE[subcode](subcode, message)
    return _BY_CODE.get(code, Error)(code, message)
