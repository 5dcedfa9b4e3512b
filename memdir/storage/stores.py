"""Which store a memory opens: the directory at the root (the default), or PostgreSQL.

The ``store`` setting (``--store`` on the commands) names it: empty for the directory,
a ``postgresql://`` URL for a database shared by many servers (`memdir.storage.postgres`).
Either way `open_store` returns the pair `memdir.memory.Memory` works with: the adapter
(the truth) and the index search reads (`memdir.storage.base`).
"""

from __future__ import annotations

import logging

from memdir.core.errors import ConfigError
from memdir.core.settings import Settings
from memdir.storage import open_mode
from memdir.storage.audit_log import AuditLog
from memdir.storage.base import AuditTrail, EntryIndex, RecordLog, StorageAdapter
from memdir.storage.credentials import shown
from memdir.storage.directory.filesystem import FilesystemAdapter
from memdir.storage.directory.index import DerivedIndex
from memdir.storage.evolution_records import RecordFiles

log = logging.getLogger(__name__)

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(store: str) -> bool:
    """True if the ``store`` setting names a PostgreSQL database."""
    return store.startswith(POSTGRES_SCHEMES)


def _database_url(settings: Settings) -> str | None:
    """The store setting's PostgreSQL URL, None for the directory at the root.

    Raises:
        ConfigError: the setting is neither.
    """
    store = settings.storage.store.strip()
    if store and not is_postgres(store):
        raise ConfigError(
            f"the store setting {shown(store)!r} is neither empty (the directory at the root) nor a postgresql:// URL.",
            "Give --store postgresql://user@host/dbname (or MEMDIR_STORE), or leave it empty.",
        )
    return store or None


def open_store(settings: Settings, *, read_only: bool = False) -> tuple[StorageAdapter, EntryIndex]:
    """The adapter and index of the configured store (see `memdir.memory.Memory.open` for ``read_only``)."""
    url = _database_url(settings)
    if url is not None:
        from memdir.storage.postgres.store import open_postgres  # psycopg is loaded only for this store

        return open_postgres(url, settings, read_only=read_only)
    return open_directory(settings, read_only=read_only)


def check_store(settings: Settings) -> None:
    """Refuse now a store setting that cannot be used: a server checks it at start rather than
    start, stay silent, and then fail every call (the directory store is checked as it opens).

    Raises:
        ConfigError: the setting names no store memdir knows.
        StoreUnavailableError: the database cannot be reached or refuses the login.
    """
    url = _database_url(settings)
    if url is None:
        return
    from memdir.storage.postgres.database import Database

    database = Database(url, lock_timeout=settings.storage.lock_timeout)
    try:
        database.connection()
    finally:
        database.close()


def open_audit(settings: Settings) -> AuditTrail:
    """The configured store's audit trail, for reading (`memdir audit`): no index is opened for it."""
    if _database_url(settings) is not None:
        return open_store(settings, read_only=True)[0].audit
    return AuditLog(settings.store_root)


def open_records(settings: Settings) -> RecordLog:
    """The configured store's record logs, for reading (`memdir evolve --history`): no index is opened for them."""
    if _database_url(settings) is not None:
        return open_store(settings, read_only=True)[0].records
    return RecordFiles(settings.store_root)


def open_directory(settings: Settings, *, read_only: bool = False) -> tuple[FilesystemAdapter, DerivedIndex]:
    """The files under ``settings.store_root`` and their derived SQLite index."""
    root = settings.store_root
    reason = open_mode.read_only_reason(root, read_only)
    adapter = FilesystemAdapter(
        root,
        max_entry_size=settings.storage.max_entry_size,
        max_total_size=settings.storage.max_total_size,
        lock_timeout=settings.storage.lock_timeout,
        max_redirect_hops=settings.storage.max_redirect_hops,
        min_free_disk=settings.storage.min_free_disk,
        read_only=reason,
    )
    if reason is not None and not read_only:
        log.warning("the memory root %s is %s: opened read-only, writes are refused", root, reason)
    index = DerivedIndex(
        adapter.root,
        column_weights=settings.search.bm25_column_weights,
        in_memory=reason is not None and not open_mode.can_update_index(adapter.root),
        wal_limit=settings.storage.index_wal_limit,
        context_window=settings.search.context_window if settings.search.context_weight else 0,
    )
    return adapter, index


__all__ = ["POSTGRES_SCHEMES", "is_postgres", "open_directory", "open_store"]
