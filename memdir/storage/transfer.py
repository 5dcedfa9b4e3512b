"""Copying a whole store into another: a directory into PostgreSQL and back (`memdir export` / `import`).

Every entry goes across as it is stored — content byte for byte, title, metadata, hits,
``updated_at``, the vector with the model and text hash it was made from — and every stub
as a stub, so a directory exported to PostgreSQL and back holds the same ``.md``, ``.yml``
and ``.emb`` bytes (tests/test_transfer.py). Built-in entries are package data and are
not copied. The target's search data is rebuilt by the caller opening it (`Memory.reconcile`).
Entries are copied in batches, each under the target's write lock (one transaction each
in PostgreSQL). The audit trail goes across too, record for record (appended to the
target's, oldest first): the history of who changed what moves with the store. So do the
working-memory threads, each log line for line (`memdir.storage.base.ThreadLogs`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice

from memdir.core.errors import InputValidationError
from memdir.storage.base import StorageAdapter

BATCH = 500


@dataclass(frozen=True, slots=True)
class TransferReport:
    entries: int
    stubs: int
    audit_records: int
    threads: int = 0


def copy_entries(
    source: StorageAdapter, target: StorageAdapter, *, progress: Callable[[int, int], None] | None = None
) -> TransferReport:
    """Copy every entry, stub and thread of ``source`` into the empty store ``target``.

    Raises:
        InputValidationError: ``target`` already holds entries or threads (nothing is copied then).
    """
    entries = sum(1 for _ in target.iter_entries(include_stubs=True, with_metadata=False))
    threads = len(target.threads.ids())
    if entries or threads:
        held = " and ".join(text for count, text in ((entries, f"{entries} entries"), (threads, f"{threads} threads")) if count)
        raise InputValidationError(
            f"The target store already holds {held}; nothing was copied.",
            "Copy into a new, empty directory or database (a whole store is moved, not merged).",
        )
    paths = [info.path for info in source.iter_entries(include_stubs=True, with_metadata=False)]
    entries = stubs = 0
    for start in range(0, len(paths), BATCH):
        with target.lock.exclusive():
            for path in paths[start : start + BATCH]:
                redirect = source.read_redirect(path)
                if redirect is not None:
                    target.write_stub(path, redirect)
                    stubs += 1
                    continue
                entry = source.read_entry(path, follow=False)
                target.write(
                    path, entry.content, title=entry.title, metadata=entry.metadata, embedding=entry.embedding,
                    hits=entry.hits, updated_at=entry.updated_at, embedding_model=entry.embedding_model,
                    embedding_text_hash=entry.embedding_text_hash,
                )
                entries += 1
        if progress:
            progress(min(start + BATCH, len(paths)), len(paths))
    return TransferReport(entries, stubs, copy_audit(source, target), copy_threads(source, target))


def copy_threads(source: StorageAdapter, target: StorageAdapter) -> int:
    """Copy every thread's event log of ``source`` into ``target`` (which holds none: `copy_entries` checks); how
    many."""
    threads = source.threads.ids()
    for thread in threads:
        lines = [line for _, line in source.threads.read(thread, 0) or []]
        with target.lock.exclusive():
            target.threads.create(thread, lines)
    return len(threads)


def copy_audit(source: StorageAdapter, target: StorageAdapter) -> int:
    """Append ``source``'s audit records to ``target``'s, in batches under its write lock; how many."""
    copied = 0
    records = iter(source.audit.records())
    while True:
        batch = list(islice(records, BATCH))
        if not batch:
            return copied
        with target.lock.exclusive():
            target.audit.append_many(batch)
        copied += len(batch)
