"""What every importer shares: records read from another memory system, checked, then written.

An importer reads its source into `Incoming` records (one entry each, with the source's id,
timestamps and the links it holds, by source id) and `Skipped` lines for what it could not
read. `apply` then checks every record before writing any (a record whose path or metadata
memdir would refuse is skipped with a line naming it), resolves links to the paths of the
imported entries, and writes each entry unless the same record is already stored: in batches
(`Memory.write_many`), each recorded in the import's journal before it is written
(`memdir.importers.journal`), so an import stopped halfway is undone.

Idempotent: each entry keeps under ``imported`` the source format, the record's id, its
timestamps and a digest of what the import wrote; an entry holding the same digest is left
alone, so a second run of the same import changes nothing, and a record changed at the source
is written again, unless its entry was changed in memdir since (a hash of the content the
import wrote is kept too). An entry at the path that came from elsewhere (another record,
another format, or written by an agent) is never overwritten: the record is skipped and says why.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from memdir.core.entry import Metadata
from memdir.core.errors import MemdirError
from memdir.core.links import LINK_KINDS, RELATED_KIND
from memdir.core.paths import normalize_path
from memdir.core.units import plural
from memdir.importers.journal import RolledBack

if TYPE_CHECKING:
    from memdir.importers.journal import ImportJournal
    from memdir.memory import Memory, NewEntry

IMPORTED = "imported"
"""The metadata key holding where an imported entry came from."""


@dataclass
class Incoming:
    """One entry to import.

    Attributes:
        source_id: the record's id in its source (a name, a content hash, a permalink).
        path: where it goes in memdir (logical path).
        links: (target's source id, memdir link kind, the source's own name for the relation).
        created_at, updated_at: the source's timestamps; ``updated_at`` becomes the entry's.
        origin: more of what the source said about the record (kept under ``imported``).
    """

    source_id: str
    path: str
    title: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    links: list[tuple[str, str, str]] = field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    origin: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Skipped:
    """A record (or a link) left out, and why."""

    what: str
    why: str


@dataclass
class ImportReport:
    """What an import did, by outcome."""

    source_format: str
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    links: int = 0
    rolled_back: list[RolledBack] = field(default_factory=list)
    """Earlier imports found stopped halfway, and undone before this one."""

    @property
    def changed(self) -> int:
        return len(self.created) + len(self.updated)

    def describe(self) -> str:
        """One summary line, then one line per skipped record."""
        head = (f"{self.source_format}: {len(self.created)} imported, {len(self.updated)} updated, "
                f"{len(self.unchanged)} unchanged, {len(self.skipped)} skipped"
                + (f", {plural(self.links, 'link')}" if self.links else "") + ".")
        return "\n".join([*(undone.describe() for undone in self.rolled_back), head,
                          *(f"  skipped {item.what}: {item.why}" for item in self.skipped)])


def slug(text: str, limit: int = 60) -> str:
    """A path segment from any name: ``Acme Corp. (EU)`` -> ``acme-corp-eu``; a name with no
    latin letter or digit (``東京``) -> ``n-`` and a hash of it, the same for the same name."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    cut = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:limit].strip("-")
    return cut or f"n-{short_hash(text)}"


def short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def unique_paths(records: list[Incoming]) -> None:
    """Give records whose paths collide (two names with the same slug) a path of their own each."""
    seen: dict[str, int] = {}
    for record in records:
        seen[record.path] = seen.get(record.path, 0) + 1
    for record in records:
        if seen[record.path] > 1:
            stem = record.path.removesuffix(".md")
            record.path = f"{stem}-{short_hash(record.source_id)}.md"


def link_kind(relation: str) -> str:
    """memdir's link kind for a source's relation name: the kind it names, else ``references``."""
    words = set(re.split(r"[^a-z]+", relation.lower()))
    for kind in LINK_KINDS:
        if kind in words or kind.rstrip("s") in words:
            return kind
    return RELATED_KIND


def iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat() if moment else None


def _digest(record: Incoming, links: list[dict[str, Any]]) -> str:
    body = json.dumps([record.path, record.title, record.content, record.metadata, links, record.origin,
                       iso(record.created_at), iso(record.updated_at)], sort_keys=True, default=str)
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass
class _Checked:
    record: Incoming
    metadata: Metadata
    digest: str
    existed: bool = False
    refused: str | None = None

    def new_entry(self) -> NewEntry:
        from memdir.memory import NewEntry

        return NewEntry(self.record.path, self.record.content, self.record.title, self.metadata, self.record.updated_at)


def _check(record: Incoming, source_format: str, paths: dict[str, str], report: ImportReport) -> _Checked | None:
    """The record's full metadata, or None (and a skipped line) when memdir would refuse it."""
    links, relations = [], []
    for target_id, kind, relation in record.links:
        target = paths.get(target_id)
        if target is None:
            report.skipped.append(Skipped(f"link {record.source_id!r} -> {target_id!r}",
                                          "the target is not in the source (or was skipped)"))
            continue
        if target == record.path:
            continue  # memdir links never point at their own entry
        links.append({"target": target, "kind": kind})
        relations.append({"to": target_id, "relation": relation})
    origin = {"format": source_format, "id": record.source_id, **record.origin,
              "created_at": iso(record.created_at), "updated_at": iso(record.updated_at)}
    if relations:
        origin["relations"] = relations
    origin = {key: value for key, value in origin.items() if value not in (None, [], {})}
    origin["digest"] = _digest(record, links)
    origin["written"] = short_hash(record.content)
    try:
        metadata = Metadata.model_validate({**record.metadata, "links": links, IMPORTED: origin})
    except (ValidationError, MemdirError) as exc:
        report.skipped.append(Skipped(f"record {record.source_id!r}", f"its metadata is not valid: {_first_error(exc)}"))
        return None
    return _Checked(record, metadata, origin["digest"])


def _first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        error = exc.errors()[0]
        return f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
    return str(exc)


def _resolve_paths(records: list[Incoming], report: ImportReport) -> list[Incoming]:
    """The records with a path memdir accepts (normalised); the others skipped with the reason."""
    kept = []
    for record in records:
        try:
            record.path = normalize_path(record.path)
        except MemdirError as exc:
            report.skipped.append(Skipped(f"record {record.source_id!r}", exc.message))
            continue
        kept.append(record)
    return kept


BATCH = 256
"""Entries written together (`Memory.write_many`: their vectors in one batch), each batch journaled first."""


def apply(memory: Memory, source_format: str, records: list[Incoming], skipped: list[Skipped],
          journal: ImportJournal, progress: Callable[[int, int], None] | None = None) -> ImportReport:
    """Check every record, then write those not already stored, in journaled batches (see the module docstring)."""
    report = ImportReport(source_format, skipped=list(skipped))
    unique_paths(records)
    records = _resolve_paths(records, report)
    paths = {record.source_id: record.path for record in records}
    checked = [item for record in records if (item := _check(record, source_format, paths, report)) is not None]
    for start in range(0, len(checked), BATCH):
        batch = [item for item in checked[start:start + BATCH] if _needs_writing(memory, item, source_format, report)]
        if batch:
            journal.before([item.record.path for item in batch])
            _write(memory, batch, report)
        if progress is not None:
            progress(min(start + BATCH, len(checked)), len(checked))
    return report


def _needs_writing(memory: Memory, item: _Checked, source_format: str, report: ImportReport) -> bool:
    """Whether the record is to be written: not when the same is stored, or the entry there is not its own to change."""
    record = item.record
    existing = _existing(memory, record.path)
    item.existed = existing is not None
    if existing is None:
        return True
    content, origin = existing
    if origin.get("format") != source_format or origin.get("id") != record.source_id:
        report.skipped.append(Skipped(f"record {record.source_id!r}",
                                      f"memory://{record.path} already holds another entry; it is left as it is"))
        return False
    if origin.get("digest") == item.digest:
        report.unchanged.append(record.path)
        return False
    if origin.get("written") != short_hash(content):
        report.skipped.append(Skipped(f"record {record.source_id!r}", f"memory://{record.path} was changed in "
                                      "memdir since it was imported; it is left as it is"))
        return False
    return True


def _write(memory: Memory, batch: list[_Checked], report: ImportReport) -> None:
    """Write a batch together; when memdir refuses one of them, each on its own, the refused one skipped by name."""
    try:
        memory.write_many([item.new_entry() for item in batch])
    except MemdirError:
        for item in batch:
            existing = _existing(memory, item.record.path)
            if existing is not None and existing[1].get("digest") == item.digest:
                continue  # written before the batch stopped
            try:
                memory.write_many([item.new_entry()])
            except MemdirError as exc:
                item.refused = exc.message
                report.skipped.append(Skipped(f"record {item.record.source_id!r}", exc.message))
    for item in batch:
        if item.refused is None:
            (report.updated if item.existed else report.created).append(item.record.path)
            report.links += len(item.metadata.links)


def _existing(memory: Memory, path: str) -> tuple[str, dict[str, Any]] | None:
    """The content of the entry at ``path`` and what it says it was imported from ({}: not imported); None for no entry."""
    if not memory.exists(path):
        return None
    entry = memory.read(path)
    origin = (entry.metadata.model_extra or {}).get(IMPORTED)
    return entry.content, origin if isinstance(origin, dict) else {}


__all__ = ["IMPORTED", "ImportReport", "Incoming", "Skipped", "apply", "iso", "link_kind", "short_hash", "slug"]
