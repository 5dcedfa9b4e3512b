"""Opening the PostgreSQL store: connect, migrate, and hand `Memory` its adapter and index."""

from __future__ import annotations

import logging

import psycopg

from memdir.core.errors import StoreUnavailableError
from memdir.core.files import disk_errors
from memdir.core.settings import Settings
from memdir.storage.credentials import redact, shown
from memdir.storage.postgres.adapter import PostgresAdapter
from memdir.storage.postgres.database import Database, first_line, scalar
from memdir.storage.postgres.held import HeldRows
from memdir.storage.postgres.index import PostgresIndex
from memdir.storage.postgres.schema import applied_migrations, check_known, migrate

log = logging.getLogger(__name__)


def open_postgres(url: str, settings: Settings, *, read_only: bool = False) -> tuple[PostgresAdapter, PostgresIndex]:
    """The store in the database at ``url``, its schema brought up to date (unless ``read_only``).

    The local root (``settings.store_root``) is still created for what each machine keeps for itself;
    the store's records (thread logs, the evolution jobs' history, defrag journals) are in the database.
    """
    if not read_only:
        with disk_errors(settings.store_root):
            settings.store_root.mkdir(parents=True, exist_ok=True)
    db = Database(url, lock_timeout=settings.storage.lock_timeout)
    conn = db.connection()
    try:
        if read_only:
            present = scalar(conn, "SELECT to_regclass('entries') IS NOT NULL")
            if not present:
                raise StoreUnavailableError(shown(url), "it holds no memdir store yet (a first write creates one)")
            check_known(applied_migrations(conn))
        else:
            for name in migrate(conn):
                log.info("store %s: applied migration %s", shown(url), name)
        db.vector_ready()
    except psycopg.Error as exc:
        db.close()
        raise StoreUnavailableError(shown(url), redact(first_line(exc), url)) from exc
    except BaseException:
        db.close()
        raise
    held = HeldRows()  # (rows the adapter writes wait here for the index's search columns)
    adapter = PostgresAdapter(
        db,
        settings.store_root,
        max_entry_size=settings.storage.max_entry_size,
        max_total_size=settings.storage.max_total_size,
        max_redirect_hops=settings.storage.max_redirect_hops,
        held=held,
        read_only="opened for reading only" if read_only else None,
    )
    index = PostgresIndex(
        db, column_weights=settings.search.bm25_column_weights, hnsw_ef_search=settings.storage.hnsw_ef_search,
        context_window=settings.search.context_window if settings.search.context_weight else 0, read_only=read_only,
        held=held,
    )
    return adapter, index
