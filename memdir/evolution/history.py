"""The evolution jobs' run record: ``<root>/evolution/runs.jsonl`` (a table row each in a PostgreSQL store).

It cannot be derived from the entries, so the store keeps it with them (``adapter.records``,
`memdir.storage.evolution_records`, which also holds the importance history), append-only, one
JSON object per run:

* ``runs.jsonl`` — every job run, by hand or by the scheduler: ``job``, ``started``,
  ``finished``, ``status`` (``complete``, ``partial`` — stopped at its batch size, ``timeout``,
  ``interrupted`` — a tool call came, ``error``), ``processed``, ``changed``, ``error``,
  ``dry_run`` and ``cursor`` (where a partial run stopped; the next one goes on from there).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memdir.storage.base import RecordLog

RUNS_FILE = "runs.jsonl"
STATUSES = ("complete", "partial", "timeout", "interrupted", "error")
UNFINISHED = ("partial", "timeout", "interrupted")
"""Statuses of a run that stopped before covering the store: the next run goes on from its cursor."""


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One job run, as ``runs.jsonl`` holds it."""

    job: str
    started: str
    finished: str
    status: str
    processed: int
    changed: int
    error: str | None = None
    dry_run: bool = False
    cursor: str | None = None
    details: list[str] = field(default_factory=list, compare=False)
    """What the run changed (or would change), one line each; shown, not written to the history."""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        del data["details"]
        return data

    @property
    def started_at(self) -> datetime:
        return datetime.fromisoformat(self.started)


def record_run(records: RecordLog, run: RunRecord) -> None:
    """Append one run to the store's run history (``runs.jsonl`` in a directory store)."""
    records.append(RUNS_FILE, [run.to_json()])


def read_runs(records: RecordLog, job: str | None = None) -> list[RunRecord]:
    """Every recorded run (of ``job``), oldest first; records that are no run record are skipped."""
    runs = []
    names = set(RunRecord.__dataclass_fields__) - {"details"}
    for read in records.read(RUNS_FILE):
        record: dict[str, Any] = dict(read)  # any JSON: the run record below checks its fields
        if job is not None and record.get("job") != job:
            continue
        try:
            runs.append(RunRecord(**{key: value for key, value in record.items() if key in names}))
        except TypeError:  # a hand-edited line missing a field
            continue
    return runs


__all__ = ["STATUSES", "UNFINISHED", "RunRecord", "read_runs", "record_run"]
