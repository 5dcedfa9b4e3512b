"""The evolution jobs' records: ``<root>/evolution/runs.jsonl`` and ``<root>/evolution/importance.jsonl``.

Neither can be derived from the entries, so both are files of the root (like ``threads/``),
append-only and human-readable, one JSON object per line:

* ``runs.jsonl`` — every job run, by hand or by the scheduler: ``job``, ``started``,
  ``finished``, ``status`` (``complete``, ``partial`` — stopped at its batch size, ``timeout``,
  ``interrupted`` — a tool call came, ``error``), ``processed``, ``changed``, ``error``,
  ``dry_run`` and ``cursor`` (where a partial run stopped; the next one goes on from there);
* ``importance.jsonl`` — every stored importance change: ``path``, ``at``, ``old``, ``new``
  and the ``reason`` (the factors that made it).

Each record is appended with one ``write`` and fsynced (`memdir.core.files.append_bytes`:
confined to the root, never through a link); a torn last line from a killed process is
skipped when reading.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memdir.core.files import append_bytes, read_regular

EVOLUTION_DIR = "evolution"
RUNS_FILE = "runs.jsonl"
IMPORTANCE_FILE = "importance.jsonl"
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


@dataclass(frozen=True, slots=True)
class ImportanceChange:
    """One stored importance change, as ``importance.jsonl`` holds it."""

    path: str
    at: str
    old: float
    new: float
    reason: str


def evolution_file(root: Path, name: str) -> Path:
    return Path(root) / EVOLUTION_DIR / name


def _append(root: Path, name: str, records: Iterable[dict[str, Any]]) -> None:
    data = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    if data:
        append_bytes(Path(root), evolution_file(root, name), data.encode("utf-8"))


def _lines(root: Path, name: str) -> Iterator[dict[str, Any]]:
    path = evolution_file(root, name)
    try:
        text = read_regular(Path(root), path).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:  # a torn last line from a killed process
            continue
        if isinstance(record, dict):
            yield record


def record_run(root: Path, run: RunRecord) -> None:
    """Append one run to ``runs.jsonl``."""
    _append(root, RUNS_FILE, [run.to_json()])


def read_runs(root: Path, job: str | None = None) -> list[RunRecord]:
    """Every recorded run (of ``job``), oldest first; lines that are no run record are skipped."""
    runs = []
    names = set(RunRecord.__dataclass_fields__) - {"details"}
    for record in _lines(root, RUNS_FILE):
        if job is not None and record.get("job") != job:
            continue
        try:
            runs.append(RunRecord(**{key: value for key, value in record.items() if key in names}))
        except TypeError:  # a hand-edited line missing a field
            continue
    return runs


def record_importance(root: Path, changes: Iterable[ImportanceChange]) -> None:
    """Append importance changes to ``importance.jsonl`` (one write for the lot)."""
    _append(root, IMPORTANCE_FILE, (asdict(change) for change in changes))


def read_importance(root: Path, path: str | None = None) -> list[ImportanceChange]:
    """Every recorded importance change (of the entry ``path``), oldest first."""
    found = []
    for record in _lines(root, IMPORTANCE_FILE):
        if path is not None and record.get("path") != path:
            continue
        try:
            found.append(ImportanceChange(**record))
        except TypeError:
            continue
    return found


__all__ = [
    "EVOLUTION_DIR", "STATUSES", "UNFINISHED", "ImportanceChange", "RunRecord", "read_importance", "read_runs",
    "record_importance", "record_run",
]
