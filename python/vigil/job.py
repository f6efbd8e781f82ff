"""An index job as Python sees it: a durable CREATE / REPLACE / DROP / BUILD of an index,
followed by its id through SHOW INDEX JOB, WAIT, CANCEL and RESOLVE. Whether a job is final,
holds its fence or can be resolved is what the engine (or the server) says with the job: the
package spells no state list of its own."""

import sys
import time

from .errors import DeadlineExceededError, InvalidArgumentError



class Job:
    """One index job. `refresh()` reads its record; the properties show the last one read."""

    def __init__(self, connection, job_id):
        self._connection = connection
        self.id = int(job_id)
        self._detail = {}
        self.refresh()

    def refresh(self):
        """Reads the job again (SHOW INDEX JOB's items and events, with the state flags) and
        returns self."""
        self._detail = self._connection._call("job", self.id)
        return self

    @property
    def state(self):
        """PENDING, RUNNING, OUTCOME_UNKNOWN, REFRESHING, FINISHED, FAILED or CANCELLED."""
        return self._detail["job"].get("State")

    @property
    def outcome(self):
        """COMMITTED, NOT_COMMITTED, UNKNOWN or None while nothing ran."""
        return self._detail["job"].get("Outcome")

    @property
    def progress(self):
        """The running attempt's last progress ("training 3/10"), or None."""
        return self._detail["job"].get("Progress")

    @property
    def message(self):
        return self._detail["job"].get("Message")

    @property
    def events(self):
        """The job's events, oldest first ("<time> ADMITTED by local_admin {...}")."""
        return list(self._detail["events"])

    @property
    def record(self):
        """Every item of SHOW INDEX JOB but the events, by name."""
        return dict(self._detail["job"])

    @property
    def done(self):
        """Whether nothing can change the job any more (`settled`): final, and not an OUTCOME_UNKNOWN
        that the reconciler or a RESOLVE may still settle."""
        return bool(self._detail["settled"])

    @property
    def final(self):
        """Whether the job's state is final: WAIT INDEX JOB returns (OUTCOME_UNKNOWN included)."""
        return bool(self._detail["final"])

    @property
    def holds_fence(self):
        """Whether the job still holds its index name: no other job on the name is admitted."""
        return bool(self._detail["holds_fence"])

    @property
    def resolvable(self):
        """Whether resolve() applies: its outcome is unknown and not yet force-released."""
        return bool(self._detail["resolvable"])

    def wait(self, timeout=None, progress=None):
        """Waits until the job is `done` (starting the root's leader when none
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
