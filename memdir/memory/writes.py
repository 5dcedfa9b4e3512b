"""Writing and deleting a memory's entries: each change atomic, checked, indexed and audited."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from memdir.core.entry import Metadata
from memdir.core.errors import DiskFullError, StaleEditError
from memdir.core.files import disk_errors
from memdir.core.paths import normalize_path
from memdir.embeddings.provider import ModelProvider, ModelState
from memdir.embeddings.text import text_hash
from memdir.memory.embedding import Embedding
from memdir.memory.keeper import IndexKeeper
from memdir.memory.ownership import Ownership
from memdir.memory.results import NewEntry, WriteResult
from memdir.storage.base import EntryIndex, EntryWrite, Redirect, StorageAdapter

log = logging.getLogger(__name__)


class Writes:
    """Creates, replaces, stubs and deletes entries: the vector is made before the lock, the index
    row and audit record are written before the store's commit point."""

    def __init__(self, adapter: StorageAdapter, index: EntryIndex, model: ModelProvider, keeper: IndexKeeper,
                 owners: Ownership, embedding: Embedding) -> None:
        self.adapter = adapter
        self.index = index
        self.model = model
        self.keeper = keeper
        self.owners = owners
        self.embedding = embedding

    def write(
        self,
        path: str,
        content: str,
        *,
        title: str = "",
        metadata: Metadata | dict[str, Any] | None = None,
        expected_content: str | None = None,
        updated_at: datetime | None = None,
        hits: int | None = None,
    ) -> WriteResult:
        """Create or replace an entry; embeds it when the model is ready.

        Args:
            expected_content: compare-and-swap for edits: the write happens only if the
                entry still holds exactly this content, checked under the lock (else
                `StaleEditError`), so a change made between reading and writing is never lost.
            updated_at: the modification time to record (None: now). Maintenance that does not
                change what an entry says (links, restores) keeps its age this way.
            hits: the read count to store (None: keep the current one).
        """
        logical, meta, text = self.prepared(path, title, metadata, content)
        vectors = self.embedding.embed([text], with_waiting=True)  # before the lock
        vector = None if vectors is None else vectors[0]
        return self.stored(logical, content, title, meta, text, vector,
                            expected_content=expected_content, updated_at=updated_at, hits=hits)

    def write_many(self, writes: Sequence[NewEntry]) -> list[WriteResult]:
        """Create or replace several entries (what bulk paths write): their embeddings made in one
        model call, then, in one turn of the lock, their files committed together (one journal,
        one round of flushes) with their index rows and audit records, as ONE change. A path
        written twice starts a second change after the first, so the later version is kept.

        Raises:
            What `write` raises. Nothing of the change that failed is written then (nor of any
            after it).
        """
        prepared = [self.prepared(w.path, w.title, w.metadata, w.content) for w in writes]
        if not prepared:
            return []
        vectors = self.embedding.embed([text for _, _, text in prepared])
        model_id = self.keeper.model_id() if vectors is not None else None
        if vectors is None and self.model.state is ModelState.LOADING:
            self.embedding.written_unembedded.update(logical for logical, _, _ in prepared)
        items = [EntryWrite(logical, w.content, w.title, meta, None if vectors is None else vectors[i], model_id, text_hash(text),
                            w.updated_at)
                 for i, (w, (logical, meta, text)) in enumerate(zip(writes, prepared))]
        results: list[WriteResult] = []
        with self.keeper.exclusive(), self.keeper.index_first(*{item.path for item in items}):
            for change in _distinct_runs(items):
                results += self._stored_together(change)
        return results

    def _stored_together(self, items: list[EntryWrite]) -> list[WriteResult]:
        """Store prepared writes of distinct paths as one change of files, index and audit (under the lock)."""
        overwritten = {item.path: self.adapter.exists(item.path) for item in items}
        before = {path: self.owners.existing(path) if there else None for path, there in overwritten.items()}
        for path, entry in before.items():
            self.owners.guard(path, entry, "update")
        hashes = {item.path: item.embedding_text_hash for item in items}
        batch = [dataclasses.replace(item, metadata=self.owners.stamped(item.metadata, before[item.path])) for item in items]
        with self.adapter.write_many(batch) as stored:  # staged: index rows and audit records go first
            self.index.upsert_many((entry, stats, hashes[entry.path], entry.embedding_model) for entry, stats in stored)
            records = [self.owners.audit_record(e.path, before[e.path], e, "update" if before[e.path] else "create") for e, _ in stored]
            with disk_errors(self.adapter.root):
                self.owners.audit.append_many(records)
        return [WriteResult(entry, overwritten[entry.path]) for entry, _ in stored]

    def prepared(self, path: str, title: str, metadata: Metadata | dict[str, Any] | None, content: str) -> tuple[str, Metadata, str]:
        """A write's checked path and metadata, and the searchable text its embedding is made from."""
        logical = normalize_path(path)
        self.keeper.check_writable()
        meta = metadata if isinstance(metadata, Metadata) else Metadata.model_validate(metadata or {})
        return logical, meta, self.keeper.card(title, meta, content)  # before the entry exists

    def stored(
        self,
        logical: str,
        content: str,
        title: str,
        meta: Metadata,
        text: str,
        vector: np.ndarray | None,
        *,
        expected_content: str | None = None,
        updated_at: datetime | None = None,
        hits: int | None = None,
    ) -> WriteResult:
        """Store a prepared write (see `write`) under the lock, with its vector (None: not embedded)."""
        model_id = self.keeper.model_id() if vector is not None else None
        if vector is None and self.model.state is ModelState.LOADING:
            self.embedding.written_unembedded.add(logical)  # embedded once the model is ready, at the latest on close
        self.adapter.will_read(logical)
        with self.keeper.exclusive(), self.keeper.index_first(logical):
            overwritten, before = self.owners.present(logical)  # (one read: its owner, its content)
            if expected_content is not None and (before is None or before.content != expected_content):
                raise StaleEditError(logical)
            self.owners.guard(logical, before, "update")

            with self.adapter.write(
                logical, content, title=title, metadata=self.owners.stamped(meta, before),
                embedding=vector, hits=hits, updated_at=updated_at,
                embedding_model=model_id, embedding_text_hash=text_hash(text),
            ) as (entry, stats):  # staged: the index row and audit record go before the commit point
                self.keeper.index_entry(entry, text, model_id, stats)
                self.owners.record(logical, before, entry, "update" if before is not None else "create")
        return WriteResult(entry, overwritten)

    def delete(self, path: str) -> str:
        """Delete an entry (all its files and index rows); returns the normalised path."""
        logical = normalize_path(path)
        try:
            self.delete_now(logical)
        except DiskFullError:
            if self.index.in_memory:
                raise
            # Deleting is how a full disk is cleaned up: if the index file cannot take even
            # that, this process goes on with the index in memory (the files stay the truth).
            log.warning("the derived index cannot grow: it is kept in memory by this process")
            self.index.keep_in_memory()
            self.delete_now(logical)
        return logical

    def delete_now(self, logical: str) -> None:
        with self.keeper.exclusive(), self.keeper.index_first(logical):  # (the adapter raises EntryNotFoundError)
            before = self.owners.existing(logical)
            self.owners.guard(logical, before, "delete")
            with self.adapter.delete(logical):
                self.index.remove(logical)
            # Recorded after the commit point, unlike other changes: a delete is how a full disk
            # is cleaned up, and the room the audit line needs is what the delete just freed.
            try:
                self.owners.record(logical, before, None, "delete")
            except DiskFullError:
                log.warning("the deletion of %s is not in the audit log: the disk is full", logical)

    def write_stub(self, path: str, target: str, kind: str = "merged", *, owner: str | None = None) -> None:
        """Turn ``path`` into a stub redirecting to ``target`` (used by merges and moves).

        The stub keeps the owner of what it replaces (``owner`` when nothing is there: an undo
        putting back a stub it recorded), so no other agent may overwrite or delete it and take
        over the path its readers are redirected through.
        """
        logical, goal = normalize_path(path), normalize_path(target)
        action = "merge" if kind == "merged" else "stub"
        with self.keeper.exclusive(), self.keeper.index_first(logical):
            before = self.owners.existing(logical)
            self.owners.guard(logical, before, action)
            if before is not None:
                owner = before.metadata.labels().created_by
            with self.adapter.write_stub(logical, Redirect(kind, goal), owner=owner):
                self.index.remove(logical)
                self.owners.record(logical, before, None, action, into=goal)

    def exists(self, path: str) -> bool:
        return self.adapter.exists(normalize_path(path))

    def redirect_of(self, path: str) -> Redirect | None:
        return self.adapter.read_redirect(normalize_path(path))


def _distinct_runs(items: list[EntryWrite]) -> list[list[EntryWrite]]:
    """``items`` in order, cut before each path the current run holds already."""
    runs: list[list[EntryWrite]] = [[]]
    seen: set[str] = set()
    for item in items:
        if item.path in seen:
            runs.append([])
            seen.clear()
        runs[-1].append(item)
        seen.add(item.path)
    return runs
