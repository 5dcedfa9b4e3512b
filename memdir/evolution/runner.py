"""Running one evolution job: its lock, its budget (batch size, timeout), its record.

A job (`Job`) looks at the store and changes what its rules say; `run_job` wraps every run,
by hand (`memdir evolve`) or by the server's scheduler (`memdir.server.scheduler`):

* **one at a time across processes** — each job has a lock file,
  ``<root>/.memdir/evolution/<job>.lock``, taken with a non-blocking ``flock``: a second
  process (another server, another `memdir evolve`) that finds it taken does not wait and
  does not run the job (`JobBusyError`). Whether a scheduled job is due is decided *under*
  the lock, from the run history, so a server that waited behind another never re-runs what
  the other has just done;
* **a budget** — a run handles at most ``batch_size`` items and stops between two items once
  its time is up or the store is in use again (``interrupted``); it records where it stopped
  (``cursor``) and the next scheduled run goes on from there, so a large store is covered in
  several short runs. A single step (reading the store, one write) is never cut short;
* **a record** — every run, dry or live, finished or failed, is appended to the history
  (`memdir.evolution.history`); a job that raises is recorded with its error and the caller
  goes on (the scheduler to the next job).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import portalocker

from memdir.core.errors import JobBusyError
from memdir.core.files import append_regular, private_folder
from memdir.core.settings import Settings
from memdir.evolution.history import UNFINISHED, RunRecord, read_runs, record_run

if TYPE_CHECKING:
    from memdir.memory import Memory

log = logging.getLogger(__name__)

T = TypeVar("T")
LOCK_DIR = Path(".memdir") / "evolution"


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class JobOutcome:
    """What a job's run did: items looked at, items changed, and where it stopped if it did."""

    processed: int = 0
    changed: int = 0
    cursor: str | None = None
    stopped: str | None = None  # partial | timeout | interrupted; None: the run covered the store
    details: list[str] = field(default_factory=list)


@dataclass
class JobContext:
    """What a job's run is given.

    Attributes:
        settings: the store's settings (the jobs' constants are there).
        now: the time the run treats as now (tests pass a fixed one).
        dry_run: say what would change, change nothing.
        batch_size: most items this run handles (None: no limit).
        cursor: the key of the last item a previous, unfinished run handled; this one starts after it.
        stop: why the run must stop now (``timeout``, ``interrupted``), or None to go on.
        options: job-specific extras (consolidation's decider).
    """

    settings: Settings
    now: datetime
    dry_run: bool = False
    batch_size: int | None = None
    cursor: str | None = None
    stop: Callable[[], str | None] = lambda: None
    options: dict[str, Any] = field(default_factory=dict)

    def each(self, items: Iterable[T], key: Callable[[T], str], outcome: JobOutcome) -> Iterator[T]:
        """``items`` in ``key`` order, from after the cursor, within the run's budget.

        Counts each item given out in ``outcome.processed``; when the batch size or the stop
        condition ends the walk early, ``outcome.stopped`` says why and ``outcome.cursor``
        where (the key of the last item handled).
        """
        handled = 0
        last: str | None = None
        for item in sorted(items, key=key):
            name = key(item)
            if self.cursor is not None and name <= self.cursor:
                continue
            if self.batch_size is not None and handled >= self.batch_size:
                outcome.stopped, outcome.cursor = "partial", last
                return
            if (why := self.stop()) is not None:
                outcome.stopped, outcome.cursor = why, last
                return
            yield item
            handled += 1
            outcome.processed += 1
            last = name


class Job(Protocol):
    """One evolution job (importance, link decay, archival, consolidation)."""

    name: str
    title: str

    def interval(self, settings: Settings) -> timedelta:
        """How long after a finished pass the job is due again."""
        ...

    def run(self, memory: Memory, context: JobContext) -> JobOutcome:
        """Apply the job's rules (or, dry, say what they would change)."""
        ...


class ScheduledJob:
    """A job whose interval is an evolution setting of days (``interval_setting``); the four jobs' base."""

    name: str
    title: str
    interval_setting: str

    def interval(self, settings: Settings) -> timedelta:
        return timedelta(days=getattr(settings.evolution, self.interval_setting))


# --------------------------------------------------------------------------- the lock


@contextmanager
def job_lock(root: Path, job: str) -> Iterator[None]:
    """Hold the job's lock file for the block, or raise `JobBusyError` at once if another holder has it.

    A ``flock`` belongs to an open file description, so two threads of one process that each
    open the file exclude each other as two processes do.
    """
    private_folder(root, LOCK_DIR)
    with append_regular(root, Path(root) / LOCK_DIR / f"{job}.lock") as handle:
        try:
            portalocker.lock(handle, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
        except portalocker.exceptions.AlreadyLocked as exc:
            raise JobBusyError(job) from exc
        except portalocker.exceptions.LockException as exc:
            raise OSError(f"Could not lock {handle.name}: {exc}") from exc
        try:
            yield
        finally:
            portalocker.unlock(handle)


# --------------------------------------------------------------------------- due-ness and runs


def is_due(job: Job, runs: list[RunRecord], settings: Settings, now: datetime) -> bool:
    """Due: never run live, its last live run stopped part-way, or its interval has passed since that run."""
    live = [run for run in runs if not run.dry_run]
    if not live:
        return True
    last = live[-1]
    return last.status in UNFINISHED or now - last.started_at >= job.interval(settings)


def run_job(
    memory: Memory,
    job: Job,
    *,
    dry_run: bool = False,
    scheduled: bool = False,
    batch_size: int | None = None,
    timeout: float | None = None,
    busy: Callable[[], bool] | None = None,
    now: datetime | None = None,
    options: dict[str, Any] | None = None,
) -> RunRecord | None:
    """Run ``job`` once under its lock and record the run.

    Args:
        dry_run: change nothing; the record says what would have changed.
        scheduled: a scheduler's run: only when due (None otherwise), going on from where an
            unfinished run stopped. A run by hand always runs, over the whole store.
        batch_size: most items handled (None: no limit).
        timeout: seconds after which the run stops between two items (None: none).
        busy: True when the store is in use again: the run stops between two items.
        now: the time the run treats as now.
        options: job-specific extras (`JobContext.options`).

    Returns:
        The run's record (also appended to the history), or None when a scheduled job was not due.

    Raises:
        JobBusyError: another process is running this job.
    """
    settings = memory.settings
    with job_lock(memory.root, job.name):
        runs = read_runs(memory.adapter.records, job.name)
        started = now or _now()
        if scheduled and not is_due(job, runs, settings, started):
            return None
        live = [run for run in runs if not run.dry_run]
        cursor = live[-1].cursor if scheduled and not dry_run and live and live[-1].status in UNFINISHED else None
        deadline = None if timeout is None else time.monotonic() + timeout

        def stop() -> str | None:
            if deadline is not None and time.monotonic() >= deadline:
                return "timeout"
            if busy is not None and busy():
                return "interrupted"
            return None

        context = JobContext(settings, started, dry_run, batch_size, cursor, stop, dict(options or {}))
        outcome, error = JobOutcome(cursor=cursor), None
        try:
            outcome = job.run(memory, context)
        except Exception as exc:  # recorded, and the caller goes on (the scheduler to its next job)
            log.exception("the %s evolution job failed", job.name)
            error = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        status = "error" if error else (outcome.stopped or "complete")
        record = RunRecord(
            job=job.name, started=started.isoformat(), finished=_now().isoformat(), status=status,
            processed=outcome.processed, changed=outcome.changed, error=error, dry_run=dry_run,
            cursor=outcome.cursor if status in UNFINISHED else None, details=outcome.details,
        )  # fmt: skip
        record_run(memory.adapter.records, record)
        return record


__all__ = ["Job", "JobContext", "JobOutcome", "LOCK_DIR", "ScheduledJob", "is_due", "job_lock", "run_job"]
