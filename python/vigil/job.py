"""An index job as Python sees it: a durable CREATE / REPLACE / DROP / BUILD of an index,
followed by its id through SHOW INDEX JOB, WAIT, CANCEL and RESOLVE."""

import sys
import time

from .errors import DeadlineExceededError, InvalidArgumentError

_FINAL = ("FINISHED", "FAILED", "CANCELLED")


class Job:
    """One index job. `refresh()` reads its record; the properties show the last one read."""

    def __init__(self, connection, job_id):
        self._connection = connection
        self.id = int(job_id)
        self._record = {}
        self._events = []
        self.refresh()

    def refresh(self):
        """Reads the job's record again (SHOW INDEX JOB) and returns self."""
        rows = self._connection.sql(f"SHOW INDEX JOB {self.id}").rows
        self._record = {item: value for item, value in rows if not item.startswith("Event ")}
        self._events = [value for item, value in rows if item.startswith("Event ")]
        return self

    @property
    def state(self):
        """PENDING, RUNNING, OUTCOME_UNKNOWN, REFRESHING, FINISHED, FAILED or CANCELLED."""
        return self._record.get("State")

    @property
    def outcome(self):
        """COMMITTED, NOT_COMMITTED, UNKNOWN or None while nothing ran."""
        return self._record.get("Outcome")

    @property
    def progress(self):
        """The running attempt's last progress ("training 3/10"), or None."""
        return self._record.get("Progress")

    @property
    def message(self):
        return self._record.get("Message")

    @property
    def events(self):
        """The job's events, oldest first ("<time> ADMITTED by local_admin {...}")."""
        return list(self._events)

    @property
    def record(self):
        """Every item of SHOW INDEX JOB but the events, by name."""
        return dict(self._record)

    @property
    def done(self):
        return self.state in _FINAL

    def wait(self, timeout=None, progress=None):
        """Waits until the job is FINISHED, FAILED or CANCELLED (starting the root's leader when none
        runs) and returns self; DeadlineExceededError (a TimeoutError) after `timeout` seconds. `progress` (default: when
        stderr is a terminal) prints the job's progress on one line of stderr."""
        show = sys.stderr.isatty() if progress is None else progress
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            step = 0.5 if show else 30.0
            if deadline is not None:
                step = max(0.0, min(step, deadline - time.monotonic()))
            try:
                self._connection.sql(f"WAIT INDEX JOB {self.id} TIMEOUT {step:.3f}")
            except DeadlineExceededError:
                pass
            self.refresh()
            if show:
                sys.stderr.write(f"\rjob {self.id}: {self.state} {self.progress or ''}\033[K")
                sys.stderr.flush()
            if self.done:
                if show:
                    sys.stderr.write("\n")
                return self
            if deadline is not None and time.monotonic() >= deadline:
                raise DeadlineExceededError("DEADLINE_EXCEEDED", f"index job {self.id} is {self.state} after {timeout} s")

    def cancel(self):
        """Cancels the job (CANCEL INDEX JOB); returns self."""
        self._connection.sql(f"CANCEL INDEX JOB {self.id}")
        return self.refresh()

    def resolve(self, action, comment, refresh=True):
        """Resolves an OUTCOME_UNKNOWN job (RESOLVE INDEX JOB ... AS action COMMENT ...): `action` is
        ACKNOWLEDGED or FORCE_RELEASE; `comment` is recorded in the audit log. Returns self."""
        if action not in ("ACKNOWLEDGED", "FORCE_RELEASE"):
            raise InvalidArgumentError("INVALID_ARGUMENT", f"action {action!r}: ACKNOWLEDGED or FORCE_RELEASE")
        quoted = "'" + str(comment).replace("'", "''") + "'"
        without = "" if refresh else " WITHOUT REFRESH"
        self._connection.sql(f"RESOLVE INDEX JOB {self.id} AS {action}{without} COMMENT {quoted}")
        return self.refresh()

    def __repr__(self):
        return f"Job(id={self.id}, state={self.state}, outcome={self.outcome})"
