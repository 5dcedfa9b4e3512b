"""Changing what an entry is to memdir rather than what it says: importance, archival,
supersession and links, without re-embedding it."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from memdir.core.entry import Entry, Metadata
from memdir.core.errors import InputValidationError
from memdir.core.files import disk_errors
from memdir.core.identity import Labels
from memdir.core.paths import normalize_path
from memdir.memory.keeper import IndexKeeper
from memdir.memory.ownership import Ownership
from memdir.memory.writes import Writes
from memdir.storage.base import EntryIndex, StorageAdapter
from memdir.storage.evolution_records import record_importance
from memdir.storage.records import ImportanceChange

log = logging.getLogger(__name__)

FieldChanges = dict[str, Any]  # metadata field -> new value (None: removed)

NO_LABELS = Labels()


class MetadataChanges:
    """Metadata changes of one or many entries, keeping their content, age, read count and vector."""

    def __init__(self, adapter: StorageAdapter, index: EntryIndex, keeper: IndexKeeper, owners: Ownership, writes: Writes) -> None:
        self.adapter = adapter
        self.index = index
        self.keeper = keeper
        self.owners = owners
        self.writes = writes

    def update(self, path: str, changes: dict[str, Any]) -> Entry:
        """Set (or, with None, remove) metadata fields of an entry, keeping everything else.

        For maintenance that changes what an entry *is* to memdir, not what it says — its
        importance, ``archived_at``, ``superseded_by``, links: the content, age and read count
        stay, and so does the vector when the searchable text is unchanged (no model needed).
        A change to a field the entry is embedded from (tags, domain) is a plain `write`.

        Raises:
            EntryNotFoundError: no entry at ``path`` (a stub is no entry here).
            InputValidationError: the changed metadata is not valid.
        """
        logical = normalize_path(path)
        with self.keeper.exclusive():
            entry = self.adapter.read_entry(logical, follow=False)
            metadata = _changed_metadata(entry, changes)
            action, facts = _metadata_action(entry.metadata, metadata)
            self.owners.guard(logical, entry, action)
            if self.keeper.card(entry.title, metadata, entry.content) != self.keeper.searchable(entry):
                label, details = self.owners.label(action)
                with self.owners.action(label, **{**facts, **details}):  # recorded as this change, not a plain update
                    return self.writes.write(logical, entry.content, title=entry.title, metadata=metadata,
                                      updated_at=entry.updated_at, hits=entry.hits).entry
            return self.store(entry, metadata, action, **facts)

    def update_many(self, changes: Mapping[str, FieldChanges | Callable[[Entry], FieldChanges | None]]) -> list[Entry]:
        """`update_metadata` of many entries as ONE change of files and index (the evolution jobs'
        batches: one commit instead of one per entry): only `BULK_FIELDS` — importance, archival,
        supersession, links — none of which the entries are embedded from. Entries that no longer
        exist are left out, and so are those this memory's actor may not change (another agent's,
        `check_change` says why): a job run by one agent changes its own entries and ownerless
        ones; an admin's changes all. Each entry changed is audited (archive, unarchive, supersede
        or update, with the fields changed).

        Args:
            changes: path -> the fields to set (None: remove), or a function from the entry as
                it is read under the lock to those fields (None or empty: leave it) — a job that
                decides from the entry itself (link decay) then reads each entry once, not twice.

        Returns:
            The updated entries.

        Raises:
            InputValidationError: a changed metadata is not valid; nothing is changed then.
            ValueError: a field outside `BULK_FIELDS`.
        """
        wanted = {normalize_path(path): change for path, change in changes.items()}
        _check_bulk_fields(change for change in wanted.values() if not callable(change))
        before: dict[str, tuple[Entry, str, dict[str, Any]]] = {}  # path -> (entry as read, audit action, facts)

        def decide(entry: Entry) -> Metadata | None:  # under the lock, from the store's one read; before anything is staged
            change = wanted[entry.path]
            fields = change(entry) if callable(change) else change
            if not fields:
                return None
            _check_bulk_fields([fields])
            changed = _changed_metadata(entry, fields)
            action, facts = _metadata_action(entry.metadata, changed)
            self.owners.guard(entry.path, entry, action)  # (the index lagged a hand edit)
            before[entry.path] = (entry, action, facts)
            return changed.model_copy(update={"modified_by": self.owners.actor.name})

        with self.keeper.exclusive(), self.keeper.index_first(*wanted):
            labels = self.index.labels(list(wanted))
            allowed = [path for path in wanted if self.owners.actor.may_change(labels.get(path, NO_LABELS))]
            if len(allowed) < len(wanted):
                log.info("%s may not change %d of the entries: left as they are", self.owners.actor.label, len(wanted) - len(allowed))
            with self.adapter.set_metadata(allowed, decide) as stored:  # staged: index rows and audit records go first
                rows = []
                for written, stats in stored:
                    card = self.keeper.text_hash_of(written)
                    rows.append((written, stats, card, written.embedding_model, written.embedding_text_hash or card))
                self.index.restamp_metadata(rows)
                records = []
                for written, _ in stored:
                    entry, action, facts = before[written.path]
                    records.append(self.owners.audit_record(written.path, entry, written, action, **facts))
                with disk_errors(self.adapter.root):
                    self.owners.audit.append_many(records)
            return [written for written, _ in stored]

    def recalibrate_importance(self, changes: Iterable[ImportanceChange]) -> list[ImportanceChange]:
        """Keep the importance job's recalibrated importance: recorded in the store's importance history
        (``evolution/importance.jsonl``, or a row each in PostgreSQL; with the importance each entry
        states now), then held by the index, where ranking,
        archival and prefetch read it. The entries' files are not rewritten: what an entry
        states is what a person or agent set, and a recalibration counts only while the entry
        still states that (one set later, by hand or by a write, wins); a daily recalibration
        does not rewrite thousands of ``.yml`` files under the user's version control either.
        A rebuilt index replays the record, so deleting ``.memdir/`` loses nothing.

        Entries that no longer exist are left out, and so are those this memory's actor may
        not change (as in `update_metadata_many`).

        Returns:
            The changes kept, each with the importance its entry states.
        """
        wanted = {normalize_path(change.path): change for change in changes}
        with self.keeper.exclusive():
            labels = self.index.labels(list(wanted))
            facts = self.index.rank_facts(list(wanted))
            kept = [
                dataclasses.replace(change, path=path, stated=facts[path].stated) for path, change in wanted.items()
                if path in facts and self.owners.actor.may_change(labels.get(path, NO_LABELS))
            ]  # fmt: skip
            if kept:
                with disk_errors(self.adapter.root):
                    record_importance(self.adapter.records, kept)
                self.index.recalibrate(kept)
        return kept

    def importance(self, path: str) -> float | None:
        """The importance of the entry at ``path`` as ranking sees it (recalibrated, else stated;
        None when neither gives one or there is no such entry)."""
        logical = normalize_path(path)
        facts = self.index.rank_facts([logical]).get(logical)
        return facts.importance if facts else None

    def store(self, entry: Entry, metadata: Metadata, action: str | None, **facts: Any) -> Entry:
        """Store new metadata that is not part of the searchable text (links, importance, archival):
        the entry keeps its vector (no model needed) as well as its content, age and read count.

        ``action`` (with ``facts``) is what the audit log records, unless the caller labelled the
        change (`action`); None for bookkeeping that changes nothing an entry says (a link's
        traversal time): not audited, and ``modified_by`` stays.
        """
        if action is not None:
            metadata = metadata.model_copy(update={"modified_by": self.owners.actor.name})

        with self.keeper.index_first(entry.path), self.adapter.write(
            entry.path, entry.content, title=entry.title, metadata=metadata,
            embedding=entry.embedding, hits=entry.hits, updated_at=entry.updated_at,
            embedding_model=entry.embedding_model, embedding_text_hash=entry.embedding_text_hash,
        ) as (written, stats):  # staged: the index row and audit record go before the commit point, as in a write
            self.index.upsert(written, stats, self.keeper.text_hash_of(written), entry.embedding_model,
                              vector_text_hash=entry.embedding_text_hash)
            if action is not None:
                self.owners.record(entry.path, entry, written, action, **facts)
        return written


BULK_FIELDS = frozenset({"importance", "archived_at", "unarchived_at", "superseded_by", "links"})
"""What `Memory.update_metadata_many` may change: no text, tag or owner the index keeps otherwise."""


def _check_bulk_fields(changes: Iterable[FieldChanges]) -> None:
    """Raise ValueError for a field `Memory.update_metadata_many` may not change (see `BULK_FIELDS`)."""
    unknown = {key for change in changes for key in change} - BULK_FIELDS
    if unknown:
        raise ValueError(f"update_metadata_many changes only {sorted(BULK_FIELDS)}, not {sorted(unknown)}")


def _changed_metadata(entry: Entry, changes: dict[str, Any]) -> Metadata:
    """``entry``'s metadata with ``changes`` set (None: removed).

    Raises:
        InputValidationError: the result is not valid metadata.
    """
    data = {**entry.metadata.to_yaml_dict(), **changes}
    try:
        return Metadata.model_validate({key: value for key, value in data.items() if value is not None})
    except ValueError as exc:  # pydantic's ValidationError
        raise InputValidationError(
            f"The metadata of memory://{entry.path} cannot take {changes!r}: {exc}", "Nothing was changed."
        ) from exc


def _metadata_action(before: Metadata, after: Metadata) -> tuple[str, dict[str, Any]]:
    """The audit action of a metadata change (archive, unarchive, supersede, else update) and the fields it changed."""
    old, new = before.to_yaml_dict(), after.to_yaml_dict()
    fields = sorted(key for key in old.keys() | new.keys() if key != "modified_by" and old.get(key) != new.get(key))
    if (before.archived_at is None) != (after.archived_at is None):
        action = "archive" if after.archived_at is not None else "unarchive"
    elif after.superseded_by and after.superseded_by != before.superseded_by:
        action = "supersede"
    else:
        action = "update"
    return action, {"fields": fields}
