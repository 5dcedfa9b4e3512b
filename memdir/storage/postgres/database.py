"""Connections to the PostgreSQL store and its store-wide lock.

Each thread gets its own connection (autocommit; a transaction only where a lock is held),
so a server's read pool never reads inside the writer's open transaction, and a thread's
reads inside its own change see that change.

The lock (`AdvisoryLock`) is the directory store's file lock carried over to a database:
the exclusive lock is a transaction holding a transaction-level advisory lock, so every
change made under it — entry, search columns, postings, statistics, links, change counter
— commits together or not at all, and changes from any number of servers on any number
of machines are serialised (no lost updates; a compare-and-swap checked under it holds).
The shared lock is a transaction holding the shared advisory lock (one consistent view).
Both are re-entrant per thread; an inner exclusive request inside a shared hold is refused
(no upgrades), as for the file lock. Statements whose answer nobody waits for (an audit record,
a written entry's search columns) can go with the holding transaction's commit (`AdvisoryLock.at_commit`),
and a question every change asks first (is the index behind?) with the statements that take the lock
(`AdvisoryLock.ask_on_taking`): round trips fewer while the other writers wait for the lock.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, Protocol

import psycopg
from pgvector.psycopg import register_vector

from memdir.core.errors import LockTimeoutError, StoreUnavailableError
from memdir.storage.credentials import redact, shown

STORE_LOCK = 0x6D656D64_6972_0002 & 0x7FFF_FFFF_FFFF_FFFF  # advisory key: changes to the store


def roll_back(conn: psycopg.Connection) -> None:
    """End the transaction ``conn`` is in, if any, undoing it (on a broken connection, nothing:
    the error on its way out says why)."""
    if not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        with suppress(psycopg.Error):
            conn.execute("ROLLBACK")


def first_line(exc: BaseException) -> str:
    """The first line of a driver's error message (the rest repeats the connection's details)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def scalar(conn: psycopg.Connection, query: str, params: Sequence[object] = ()) -> Any:
    """The value of a query that yields one row of one column (an aggregate, a function call, the
    single row of ``store_state``).

    Raises:
        LookupError: the query yielded no row (the store's tables were changed by hand).
    """
    row = conn.execute(query, params).fetchone()
    if row is None:
        raise LookupError(f"the store's database gave no row for {query!r}: its tables were changed by hand")
    return row[0]


class Executes(Protocol):
    """What runs a statement whose answer is not read: a connection, or `AtCommit`."""

    def execute(self, query: str, params: Sequence[Any]) -> object: ...


class AtCommit:
    """Statements run as on a connection (`Executes`), sent with the commit of the transaction this thread holds
    (`AdvisoryLock.at_commit`)."""

    def __init__(self, lock: AdvisoryLock) -> None:
        self.lock = lock

    def execute(self, query: str, params: Sequence[Any]) -> None:
        if not self.lock.at_commit(query, [params]):
            raise RuntimeError("a statement was left for the commit of a transaction this thread does not hold")


Question = tuple[str, Sequence[Any]]
"""A read-only query and its parameters (`AdvisoryLock.ask_on_taking`)."""


@dataclass
class _Held:
    mode: str | None = None
    depth: int = 0
    at_commit: list[tuple[str, list[Sequence[Any]]]] = field(default_factory=list)
    answers: dict[str, list[Any]] = field(default_factory=dict)
    """The rows answering `AdvisoryLock.ask_on_taking`'s questions, read with the lock, until taken."""
    next_questions: dict[str, Question] = field(default_factory=dict)
    """Questions for the next time this thread takes the exclusive lock alone."""


class Database:
    """The store's database: one connection per thread (per process: a forked child reconnects)."""

    def __init__(self, url: str, *, lock_timeout: float) -> None:
        self.url = url
        self.lock = AdvisoryLock(self, lock_timeout)
        self._local = threading.local()
        self._all: list[tuple[int, psycopg.Connection]] = []
        self._guard = threading.Lock()
        self._vector_ready = False

    def _connection(self) -> psycopg.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and not conn.closed and self._local.pid == os.getpid():
            return conn
        try:
            conn = psycopg.connect(self.url, autocommit=True)
            # Entries' times come back as UTC, as the files have them. Custom plans always: a generic
            # plan (psycopg prepares a query run five times) cannot use the HNSW index for
            # ``ORDER BY embedding <=> $1`` and scanned every vector (100K: 0.6 s instead of 2 ms).
            # No JIT: a search's statements take milliseconds, and a server built with LLVM would
            # compile one whose estimate passes jit_above_cost (a 1M store's BM25 over a common
            # word) for longer than it runs. (Not measured here: the test server has no JIT.)
            conn.execute("SET TIME ZONE 'UTC'; SET plan_cache_mode = force_custom_plan; SET jit = off")
        except psycopg.Error as exc:
            raise StoreUnavailableError(shown(self.url), redact(first_line(exc), self.url)) from exc
        if self._vector_ready:
            register_vector(conn)
        self._local.conn, self._local.pid = conn, os.getpid()
        with self._guard:
            self._all.append((os.getpid(), conn))
        return conn

    def connection(self) -> psycopg.Connection:
        """This thread's connection, after the statements its change left for the commit (`AdvisoryLock.at_commit`)
        are sent: whatever the change runs next sees them."""
        conn = self._connection()
        self.lock.send_pending(conn)
        return conn

    def vector_ready(self) -> None:
        """The pgvector extension exists now (after the migrations): connections learn its type."""
        self._vector_ready = True
        register_vector(self.connection())

    def close(self) -> None:
        with self._guard:
            conns, self._all = self._all, []
        for pid, conn in conns:
            if pid == os.getpid():  # (closing a parent's connection in a forked child would end it for the parent)
                conn.close()


def _send(conn: psycopg.Connection, pending: list[tuple[str, list[Sequence[Any]]]], *, commit: bool) -> None:
    """Send ``pending`` statements in one round trip, with the COMMIT of the open transaction when
    ``commit`` (if one fails, the transaction is rolled back and its error raised)."""
    if not pending and commit:
        conn.execute("COMMIT")
        return
    try:
        with conn.pipeline(), conn.cursor() as cursor:
            for query, rows in pending:
                cursor.executemany(query, rows)
            if commit:
                conn.execute("COMMIT")
    except BaseException:
        roll_back(conn)
        raise


class AdvisoryLock:
    """Many readers or one writer across every server using the store (see the module docstring)."""

    def __init__(self, db: Database, timeout: float) -> None:
        self.db = db
        self.timeout = timeout
        self._held = threading.local()
        self._questions: dict[str, Question] = {}

    def _state(self) -> _Held:
        held = getattr(self._held, "state", None)
        if held is None:
            held = self._held.state = _Held()
        return held

    @property
    def mode(self) -> str | None:
        """The lock the calling thread holds: ``"shared"``, ``"exclusive"`` or None."""
        return self._state().mode

    def exclusive(self, timeout: float | None = None) -> AbstractContextManager[None]:
        return self._hold("exclusive", self.timeout if timeout is None else timeout)

    def shared(self) -> AbstractContextManager[None]:
        return self._hold("shared", self.timeout)

    def close(self) -> None:
        """Nothing is kept between holds: each is a transaction of the database's connections."""

    def at_commit(self, query: str, rows: list[Sequence[Any]]) -> bool:
        """Run ``query`` once per row of ``rows`` in the transaction this thread holds, sent with its
        COMMIT (in one round trip; if one fails, nothing of the transaction commits and the commit
        raises its error), or before, should the change run more statements after it: the next
        `Database.connection` of this thread sends them first. False when the thread holds no lock:
        the caller runs it itself."""
        state = self._state()
        if state.mode is None:
            return False
        state.at_commit.append((query, rows))
        return True

    def send_pending(self, conn: psycopg.Connection) -> None:
        """Send what `at_commit` holds for the transaction this thread holds on ``conn``, now."""
        state = getattr(self._held, "state", None)
        if state is not None and state.at_commit:
            pending, state.at_commit = state.at_commit, []
            _send(conn, pending, commit=False)

    def ask_on_taking(self, name: str, query: str, params: Sequence[Any] = (), *, once: bool = False) -> None:
        """Ask ``query`` (read-only) in the round trip that takes the exclusive lock: each time it is taken
        (a question every change asks first), or, ``once``, the next time this thread takes it (nothing, if
        this thread holds it already). Its rows are `taken_answer(name)`'s."""
        if not once:
            self._questions[name] = (query, params)
        elif self._state().mode is None:
            self._state().next_questions[name] = (query, params)

    def taken_answer(self, name: str) -> list[Any] | None:
        """The rows answering the question ``name`` (`ask_on_taking`) as they were when this thread took
        the exclusive lock, once, and only while nothing can have changed them since: before any inner
        hold of the lock (every change runs in one). None when there are none: the caller asks itself."""
        state = self._state()
        rows = state.answers.pop(name, None)
        return rows if state.mode == "exclusive" and state.depth == 1 else None

    @contextmanager
    def _hold(self, mode: str, timeout: float) -> Iterator[None]:
        state = self._state()
        if state.mode is not None:
            if mode == "exclusive" and state.mode == "shared":
                raise RuntimeError("the store's exclusive lock was asked for while holding the shared one")
            state.depth += 1
            state.answers = {}  # (what the inner hold changes, the answers would not know)
            try:
                yield
            finally:
                state.depth -= 1
            return
        conn = self.db.connection()
        done = False
        try:
            questions, state.next_questions = {**self._questions, **state.next_questions}, {}
            state.answers = self._acquire(conn, mode, timeout, questions if mode == "exclusive" else {})
            state.mode, state.depth = mode, 1
            yield
            done = True
        finally:
            pending, state.mode, state.depth, state.at_commit, state.answers = state.at_commit, None, 0, [], {}
            if done:
                _send(conn, pending, commit=True)
            else:
                roll_back(conn)

    def _acquire(self, conn: psycopg.Connection, mode: str, timeout: float, questions: dict[str, Question]) -> dict[str, list[Any]]:
        """Open the holding transaction and take the lock in it, in one round trip (a lock taken by
        every change, while the others wait: its round trips are theirs); the rows answering ``questions``
        (asked once the lock is taken), by name."""
        suffix = "_shared" if mode == "shared" else ""
        if timeout <= 0:
            with conn.pipeline():
                conn.execute("BEGIN")
                taken = conn.execute(f"SELECT pg_try_advisory_xact_lock{suffix}(%s)", (STORE_LOCK,)).fetchone()
            if not (taken and taken[0]):
                raise LockTimeoutError(f"The store {shown(self.db.url)} is being changed by another server.", "Retry.")
            return {}
        try:
            with conn.pipeline():  # the transaction, the lock's wait bounded, the lock, the bound lifted, the questions
                conn.execute("BEGIN")
                conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{int(timeout * 1000)}ms",))
                conn.execute(f"SELECT pg_advisory_xact_lock{suffix}(%s)", (STORE_LOCK,))
                conn.execute("SELECT set_config('lock_timeout', '0', true)")
                asked = {name: conn.execute(query, params) for name, (query, params) in questions.items()}
        except psycopg.errors.LockNotAvailable as exc:
            raise LockTimeoutError(
                f"The store {shown(self.db.url)} stayed locked by another server for {timeout:g} s.",
                "Retry; if it persists, look for a stuck memdir process (pg_stat_activity).",
            ) from exc
        return {name: cursor.fetchall() for name, cursor in asked.items()}
