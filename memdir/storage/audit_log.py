"""The audit log: every change made to a root's entries, who made it, when, and a short diff.

``<root>/audit/YYYY-MM.jsonl``: one JSON object per line, one file per month (UTC), append
only. It is a record of the root, like the thread logs: it cannot be derived from the files,
so it lives beside the entries (in a reserved top-level folder), never under ``.memdir/``.
`Memory` appends a record inside each change, under the root's write lock, before the
change's commit point: a change whose record cannot be written (a full disk) is not made.
(A commit that then fails — one rename left, rare — leaves a record of a change that did not
happen; the entry's files are the truth.) Every file is opened through `memdir.core.files`,
so a link planted at ``audit/`` or at a month's file is refused, never followed.

A record::

    {"at": "2026-11-26T06:30:00.123456+00:00", "agent": "alice", "role": "executor",
     "admin": false, "action": "update", "path": "fact/x.md", "owner": "alice",
     "diff": "--- fact/x.md\\n+++ fact/x.md\\n@@ ...", "details": {...}}

Actions: create, update, delete, archive, unarchive, supersede, merge, link, unlink (and
stub/undo where defrag leaves them); for working-memory threads (path ``threads/<id>``):
thread-create, thread-fork, thread-configure (strategy, mode), thread-compact. ``diff`` is a unified diff of the entry's title,
metadata and content, cut to ``audit_diff_chars``.
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memdir.core.entry import Entry
from memdir.core.files import append_bytes, private_folder, read_regular
from memdir.storage.sidecar import yaml_codec

log = logging.getLogger(__name__)

AUDIT_DIR = "audit"
ACTIONS = ("create", "update", "delete", "archive", "unarchive", "supersede", "merge", "link", "unlink", "stub", "undo",
           "thread-create", "thread-fork", "thread-configure", "thread-compact")
TRUNCATED = "\n… (diff truncated)"


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """One change, as the audit log keeps it (see the module docstring)."""

    at: str
    agent: str | None
    role: str | None
    admin: bool
    action: str
    path: str
    owner: str | None = None
    diff: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def time(self) -> datetime:
        return datetime.fromisoformat(self.at)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AuditRecord:
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        return cls(**{"agent": None, "role": None, "admin": False, **known})


def entry_text(entry: Entry | None) -> list[str]:
    """The lines an entry's diff compares: its title, its metadata (as YAML) and its content."""
    if entry is None:
        return []
    return [f"title: {entry.title}", *_yaml_lines(entry.metadata.to_yaml_dict()), "---", *entry.content.splitlines()]


def _yaml_lines(data: dict[str, Any]) -> list[str]:
    import yaml

    text = yaml.dump(data, Dumper=yaml_codec()[1], sort_keys=True, allow_unicode=True).splitlines()
    return [] if text == ["{}"] else text


def change_diff(path: str, before: Entry | None, after: Entry | None, limit: int) -> str:
    """A unified diff from ``before`` to ``after`` (None: no entry), at most ``limit`` characters.

    A change of metadata only (title and content as they were: an evolution job's, a link)
    compares only the fields that changed: the diff says the same, without the context
    lines, for a fraction of the cost — a job's batch audits thousands of such changes.
    """
    if before is not None and after is not None and (before.title, before.content) == (after.title, after.content):
        old, new = before.metadata.to_yaml_dict(), after.metadata.to_yaml_dict()
        changed = [name for name in old.keys() | new.keys() if old.get(name) != new.get(name)]
        old_lines = _yaml_lines({name: old[name] for name in changed if name in old})
        new_lines = _yaml_lines({name: new[name] for name in changed if name in new})
    else:
        old_lines, new_lines = entry_text(before), entry_text(after)
    lines = difflib.unified_diff(
        old_lines, new_lines,
        fromfile=path if before is not None else "/dev/null", tofile=path if after is not None else "/dev/null",
        lineterm="", n=1,
    )
    text = "\n".join(lines)
    if limit >= 0 and len(text) > limit:
        return text[: max(0, limit)] + TRUNCATED
    return text


class AuditLog:
    """The audit log of one root: append under the root's lock, read with filters."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.folder = self.root / AUDIT_DIR

    def file_for(self, when: datetime) -> Path:
        return self.folder / f"{when.astimezone(UTC):%Y-%m}.jsonl"

    def append(self, record: AuditRecord) -> None:
        """Append one record (caller holds the root's write lock).

        Raises:
            OSError, UnsafeFileError: it could not be written; the caller's change must not go ahead.
        """
        self.append_many([record])

    def append_many(self, records: Iterable[AuditRecord]) -> None:
        """Append the records of one change of many entries (an evolution job's batch) with one
        write and one fsync per month file, not one per record (caller holds the write lock).

        Raises:
            OSError, UnsafeFileError: they could not be written; the caller's change must not go ahead.
        """
        lines: dict[Path, list[str]] = {}
        for record in records:
            fields = {name: getattr(record, name) for name in record.__dataclass_fields__}  # asdict deep-copies
            lines.setdefault(self.file_for(record.time), []).append(json.dumps(fields, ensure_ascii=False, default=str) + "\n")
        for file, text in lines.items():
            append_bytes(self.root, file, "".join(text).encode("utf-8"))

    def records(
        self, *, path: str | None = None, agent: str | None = None, since: datetime | None = None
    ) -> Iterator[AuditRecord]:
        """The records, oldest first: of one entry (``path``), by one agent, at or after ``since``.

        A line that is not a whole JSON record (a writer killed mid-line) is skipped.
        """
        try:
            folder = private_folder(self.root, AUDIT_DIR, create=False)
        except FileNotFoundError:
            return
        first_month = f"{since.astimezone(UTC):%Y-%m}" if since else ""
        for file in sorted(folder.glob("*.jsonl")):
            if file.stem < first_month:
                continue
            for line in read_regular(self.root, file).decode("utf-8", errors="replace").splitlines():
                try:
                    record = AuditRecord.from_json(json.loads(line))
                    when = record.time
                except (ValueError, TypeError) as exc:
                    log.debug("skipping an audit line of %s: %s", file.name, exc)
                    continue
                if path is not None and record.path != path:
                    continue
                if agent is not None and record.agent != agent:
                    continue
                if since is not None and when < since:
                    continue
                yield record


__all__ = ["ACTIONS", "AUDIT_DIR", "AuditLog", "AuditRecord", "change_diff", "entry_text"]
