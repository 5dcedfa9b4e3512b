"""Copying a whole store into another: a directory into PostgreSQL and back (`memdir export` / `import`).

Every entry goes across as it is stored — content byte for byte, title, metadata, hits,
``updated_at``, the vector with the model and text hash it was made from — and every stub
as a stub, so a directory exported to PostgreSQL and back holds the same ``.md``, ``.yml``
and ``.emb`` bytes (tests/test_transfer.py). Built-in entries are package data and are
not copied. The target's search data is rebuilt by the caller opening it (`Memory.reconcile`).
Entries are copied in batches, each under the target's write lock and written as one
transaction (`StorageAdapter.write_many`). The audit trail goes across too, record for record (appended to the
target's, oldest first): the history of who changed what moves with the store. So do the
working-memory threads, each log line for line (`memdir.storage.base.ThreadLogs`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from memdir.core.errors import InputValidationError
from memdir.storage.base import EntryWrite, StorageAdapter, committed

BATCH = 500
FRESH_ROOT = frozenset({".memdir", ".lock"})
"""What a store that holds nothing yet has in its folder: its derived data and its lock file."""


def check_target_folder(folder: Path, source_root: Path | None) -> None:
    """Refuse a folder a store cannot be copied into: a file, a folder holding anything but an
    empty store's own files, or one inside the source's root (the copy would copy itself).

    Args:
        folder: the target directory.
        source_root: the root of the directory store copied from (None: a database).

    Raises:
        InputValidationError: what is wrong with ``folder``; nothing is written then.
    """
    folder = folder.expanduser()
    hint = "Copy into a new or empty folder outside the memory root, or into a postgresql:// URL."
    if folder.exists() and not folder.is_dir():
        raise InputValidationError(f"{folder} is a file, not a folder.", hint)
    if source_root is not None:
        root = source_root.expanduser().resolve()
        if folder.resolve().is_relative_to(root):
            raise InputValidationError(f"{folder} is inside the memory root {root}: the copy would copy itself.", hint)
    if folder.is_dir():
        held = sorted(child.name for child in folder.iterdir() if child.name not in FRESH_ROOT)
        if held:
            shown = ", ".join(held[:5]) + (f" and {len(held) - 5} more" if len(held) > 5 else "")
            raise InputValidationError(f"{folder} is not empty (it holds {shown}).", hint)


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
        writes: list[EntryWrite] = []
        with target.lock.exclusive():
            for path in paths[start : start + BATCH]:
                entry = source.read_entry(path, follow=False)
                redirect = source.read_redirect(path)
                if redirect is not None:
                    committed(target.write_stub(path, redirect, owner=entry.metadata.labels().created_by))
                    stubs += 1
                    continue
                writes.append(EntryWrite(
                    path, entry.content, entry.title, entry.metadata, entry.embedding, entry.embedding_model,
                    entry.embedding_text_hash, entry.updated_at, entry.hits,
                ))
            committed(target.write_many(writes))  # one transaction: one journal, one round of flushes
            entries += len(writes)
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
