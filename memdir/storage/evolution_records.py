"""The evolution jobs' records — their runs and the importance history — kept by the store.

Records that cannot be derived from the entries live with them: in the directory store, files
of the root under ``<root>/evolution/`` (`RecordFiles`, like ``threads/`` and ``audit/``),
append-only and human-readable, one JSON object per line, each batch appended with one
``write`` and fsynced (`memdir.core.files.append_bytes`: confined to the root, never through a
link; a torn last line from a killed process is skipped when reading); in the PostgreSQL store,
rows of its ``records`` table (`memdir.storage.postgres.records`), so that every server on one
database sees one history. Either is a `memdir.storage.base.RecordLog` (``adapter.records``).

``importance.jsonl`` — every recalibrated importance (`memdir.evolution.importance`): ``path``,
``at``, ``old``, ``new``, the ``reason`` (the factors that made it) and ``stated`` (the
importance the entry's metadata stated when it was made; absent in records written before
memdir kept recalibrated importance apart from the files). It is the record the derived
index's effective importance is rebuilt from (`latest_importance`): a recalibration stands
while the entry states what it stated then, so a person who sets an importance by hand
overrides it. The job's run records (``runs.jsonl``) are in `memdir.evolution.history`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.core.files import append_bytes, read_regular
from memdir.storage.records import ImportanceChange

if TYPE_CHECKING:
    from memdir.storage.base import JsonRecord, RecordLog

EVOLUTION_DIR = "evolution"
IMPORTANCE_FILE = "importance.jsonl"


def evolution_file(root: Path, name: str) -> Path:
    return Path(root) / EVOLUTION_DIR / name


class RecordFiles:
    """The record logs of a directory store: ``<root>/evolution/<name>`` (`memdir.storage.base.RecordLog`)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def append(self, name: str, records: Iterable[JsonRecord]) -> None:
        append_records(self.root, name, records)

    def read(self, name: str) -> Iterator[JsonRecord]:
        return read_records(self.root, name)


def append_records(root: Path, name: str, records: Iterable[JsonRecord]) -> None:
    """Append JSON ``records`` to the record file ``name`` with one write (nothing for none)."""
    data = "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    if data:
        append_bytes(Path(root), evolution_file(root, name), data.encode("utf-8"))


def read_records(root: Path, name: str) -> Iterator[JsonRecord]:
    """The JSON objects of the record file ``name``, oldest first; lines that are none are skipped."""
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


def record_importance(records: RecordLog, changes: Iterable[ImportanceChange]) -> None:
    """Append importance changes to the importance history (one write for the lot)."""
    records.append(IMPORTANCE_FILE, (asdict(change) for change in changes))


def read_importance(records: RecordLog, path: str | None = None) -> list[ImportanceChange]:
    """Every recorded importance change (of the entry ``path``), oldest first."""
    found = []
    for read in records.read(IMPORTANCE_FILE):
        record: dict[str, Any] = dict(read)  # any JSON: the change below checks its fields
        if path is not None and record.get("path") != path:
            continue
        if "stated" not in record:  # written when the change was stored in the entry's .yml too
            record = {**record, "stated": record.get("new")}
        try:
            change = ImportanceChange(**record)
        except TypeError:  # a hand-edited line missing a field
            continue
        if _number(change.old) and _number(change.new) and (change.stated is None or _number(change.stated)):
            found.append(change)  # (a hand-edited value that is no number would be ranked as one)
    return found


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def latest_importance(records: RecordLog) -> list[ImportanceChange]:
    """The last recorded change of each entry, in path order: what the derived index holds."""
    latest = {change.path: change for change in read_importance(records)}
    return [latest[path] for path in sorted(latest)]


__all__ = [
    "EVOLUTION_DIR", "IMPORTANCE_FILE", "ImportanceChange", "RecordFiles", "append_records", "evolution_file", "latest_importance",
    "read_importance", "read_records", "record_importance",
]
