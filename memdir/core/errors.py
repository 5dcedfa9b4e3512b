"""Every error memdir raises on purpose.

Each error carries a ``message`` (what was wrong) and a ``hint`` (how to fix it),
so the MCP layer can return both to the model as one tool error and the CLI can
print them without matching on strings. A hint that names an MCP tool has a
``cli_hint`` beside it that names the command a person types instead.

    MemdirError
    ├── InputValidationError      bad arguments from a caller (SwarmMemory's name)
    │   └── InvalidPathError      a memory path that is unsafe or malformed
    │       └── UnsafeFileError   a file of the root memdir will not open (leads out, not regular,
    │                             looping symlinks, too long for the OS)
    ├── EntryNotFoundError        no entry at that path
    ├── ReadOnlyEntryError        built-in (virtual) entries cannot be changed
    ├── EntryTooLargeError        one entry over the per-entry limit
    ├── StorageFullError          the root would exceed its total size limit
    ├── DiskFullError             the disk holding the root has no room for the change
    ├── ReadOnlyRootError         the root is read-only (mount, permissions, a command that only reads)
    ├── RootNotFoundError         a read-only command named a root that does not exist
    ├── RedirectError             a stub (`# merged → ...`) that cannot be followed
    ├── StaleEditError            the entry changed since this session read it
    ├── NotOwnerError             the entry belongs to another agent (update, delete need its owner or admin)
    ├── LockTimeoutError          another process held the root's lock too long
    ├── ThreadNotFoundError       no working-memory thread with that id
    ├── JobBusyError              another process is running that evolution job
    └── ModelNotFoundError        no embedding model could be found
"""

from __future__ import annotations


class MemdirError(Exception):
    """Base of memdir's errors: a message plus a hint for the fix (for the model: ``hint``;
    for a person at the command line: ``cli_hint``, the same unless it names a tool)."""

    def __init__(self, message: str, hint: str = "", cli_hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.cli_hint = cli_hint or hint

    def __str__(self) -> str:
        return f"{self.message} {self.hint}".strip()


class InputValidationError(MemdirError):
    """A caller passed an argument memdir cannot accept."""


class InvalidPathError(InputValidationError):
    """A memory path that is empty, escapes the root or holds forbidden characters."""

    def __init__(self, path: str, message: str, hint: str = "") -> None:
        super().__init__(message, hint)
        self.path = path


class UnsafeFileError(InvalidPathError):
    """A file of the memory root that memdir refuses to open or change.

    ``reason`` says why, for callers that treat the cases differently: ``"outside"`` (a
    symbolic link leads out of the root), ``"special"`` (a named pipe, socket, device or
    folder where a regular file belongs), ``"link"`` (a symbolic link among memdir's own
    files under ``.memdir/``), ``"loop"`` (symbolic links that loop) or
    ``"too_long"`` (the full path exceeds what the operating system accepts).
    ``path`` is the file's path relative to the root.
    """

    def __init__(self, path: str, reason: str, message: str, hint: str) -> None:
        super().__init__(path, message, hint)
        self.reason = reason


class EntryNotFoundError(MemdirError):
    """No memory entry exists at the given path."""

    def __init__(self, path: str, hint: str = "") -> None:
        super().__init__(
            f"memory://{path} not found.",
            hint or "Use MemoryGlob or MemoryGrep to find existing entries.",
            hint or "Run `memdir list` or `memdir search QUERY` to find existing entries.",
        )
        self.path = path


class ReadOnlyEntryError(MemdirError):
    """Built-in entries ship with memdir and are never overwritten or deleted."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"memory://{path} is a built-in entry and cannot be changed.",
            "Write your own version under a different path.",
        )
        self.path = path


class EntryTooLargeError(MemdirError):
    """One entry's content exceeds the per-entry size limit."""

    def __init__(self, path: str, size: int, limit: int) -> None:
        super().__init__(
            f"Content for memory://{path} is {size:,} bytes; the limit per entry is {limit:,} bytes.",
            "Split it into several smaller entries.",
        )
        self.path, self.size, self.limit = path, size, limit


class StorageFullError(MemdirError):
    """The write would take the memory root over its total size limit."""

    def __init__(self, total: int, limit: int) -> None:
        super().__init__(
            f"Memory storage is full: writing would use {total:,} bytes of the {limit:,} allowed.",
            "Delete or compact entries (MemoryDefrag), or raise MEMDIR_MAX_TOTAL_SIZE.",
            "Delete entries (`memdir delete PATH`) or compact them (`memdir defrag`), or raise MEMDIR_MAX_TOTAL_SIZE.",
        )
        self.total, self.limit = total, limit


class DiskFullError(MemdirError):
    """The disk (or quota) holding the memory root has no room for a change; nothing was changed."""

    def __init__(self, root: object, detail: str = "") -> None:
        super().__init__(
            f"The disk holding the memory root {root} is full{f' ({detail})' if detail else ''}; "
            "the change was not made and the memory is as it was.",
            "Free space on that disk (delete entries with MemoryDelete, or other files), then retry.",
            "Free space on that disk (delete entries with `memdir delete PATH`, or other files), then retry.",
        )
        self.root = root


class ReadOnlyRootError(MemdirError):
    """The memory root was opened read-only (read-only mount, no write permission, or a
    read-only command), so it is searched and read but never changed."""

    def __init__(self, root: object, reason: str) -> None:
        super().__init__(
            f"The memory root {root} is read-only ({reason}): writes, edits and deletes are refused.",
            "Reading and search still work. To change memory, make the directory writable "
            "(remount it read-write or fix its permissions) and start memdir again.",
        )
        self.root, self.reason = root, reason


class RootNotFoundError(MemdirError):
    """A command that only reads was pointed at a memory root that does not exist."""

    def __init__(self, root: object) -> None:
        super().__init__(
            f"There is no memory root at {root}; nothing was created.",
            "Check --root (or MEMDIR_ROOT). A root is created by the first write "
            "(`memdir add`, a client's MemoryWrite through `memdir serve`, or `memdir ingest`).",
        )
        self.root = root


class RedirectError(MemdirError):
    """A stub entry whose redirect is circular, too deep, broken or malformed."""

    def __init__(self, path: str, message: str, hint: str = "", cli_hint: str = "") -> None:
        super().__init__(message, hint, cli_hint)
        self.path = path


class StaleEditError(MemdirError):
    """The entry was changed (by another session or process) after this session read it."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"memory://{path} has changed since you last read it.",
            "Read it again with MemoryRead before editing.",
            f"Read it again (`memdir read {path}`) before changing it.",
        )
        self.path = path


class NotOwnerError(MemdirError):
    """An agent tried to change or delete an entry another agent owns (`memdir.core.identity`)."""

    def __init__(self, path: str, owner: str, actor: str, action: str) -> None:
        super().__init__(
            f"memory://{path} belongs to {owner}; {actor} may not {action} it.",
            f"Ask {owner} to make the change, write your own entry under another path, or act as "
            "an admin (`--admin`, or admin = true in your own owner-only config file).",
        )
        self.path, self.owner, self.actor, self.action = path, owner, actor, action


class LockTimeoutError(MemdirError):
    """The root's write lock could not be taken in time."""


class ThreadNotFoundError(MemdirError):
    """No working-memory thread has this id."""

    def __init__(self, thread: str) -> None:
        super().__init__(f"no thread {thread!r}.", "ThreadList lists the threads; ThreadAppend starts a new one.")
        self.thread = thread


class ThreadOwnerError(NotOwnerError):
    """An agent tried to change a working-memory thread another agent owns."""

    def __init__(self, thread: str, owner: str, actor: str, action: str) -> None:
        MemdirError.__init__(
            self,
            f"thread {thread!r} belongs to {owner}; {actor} may not {action} it.",
            f"Fork it into a thread of your own (ThreadControl action='fork'), ask {owner}, or act as an admin.",
        )
        self.path, self.owner, self.actor, self.action = f"threads/{thread}", owner, actor, action


class JobBusyError(MemdirError):
    """Another process (a server's scheduler, a `memdir evolve`) holds the evolution job's lock."""

    def __init__(self, job: str) -> None:
        super().__init__(
            f"The {job} job is running in another process (a memdir server's scheduler or another `memdir evolve`).",
            "Wait for it to finish (`memdir evolve --history` shows when it did), then run it again if still needed.",
        )
        self.job = job


class ConfigError(MemdirError):
    """The configuration file cannot be used as it is (not TOML, or keys that are no setting)."""


class ModelNotFoundError(MemdirError):
    """No embedding model was found; memdir falls back to keyword search."""


class EmbeddingServiceError(MemdirError):
    """The remote embedding service refused, failed, or answered something that is not embeddings."""


class StoreUnavailableError(MemdirError):
    """The configured database store could not be reached or used."""

    def __init__(self, store: str, reason: str) -> None:
        super().__init__(
            f"The memory store {store} cannot be used: {reason}.",
            "Check the --store URL (or MEMDIR_STORE): host, port, database, user and password; the "
            "database needs the pgvector extension (CREATE EXTENSION vector, once, as its owner).",
        )
        self.store, self.reason = store, reason


class VectorExtensionTooOldError(StoreUnavailableError):
    """The database's pgvector is older than the version whose vector types this memdir uses."""

    def __init__(self, installed: str, needed: str) -> None:
        MemdirError.__init__(
            self,
            f"The memory store's database has pgvector {installed}, and this version of memdir needs {needed} or later "
            "(its vector index holds half-precision vectors). Nothing was changed.",
            f"Install pgvector {needed} or later on the database server, run ALTER EXTENSION vector UPDATE in the "
            "database (as its owner), then run the command again.",
        )
        self.store, self.reason = "", f"its pgvector is {installed}, older than {needed}"


class StoreTooNewError(StoreUnavailableError):
    """A newer version of memdir has changed the database's layout, which this version cannot read."""

    def __init__(self, changes: list[str]) -> None:
        MemdirError.__init__(
            self,
            "A newer version of memdir has upgraded this memory store, and this version cannot read it "
            f"(it does not know the store's layout changes {', '.join(changes)}). Nothing was changed.",
            "Upgrade memdir here to the version the other servers on this database run "
            "(install it again from that version's source), then run the command again.",
        )
        self.store, self.reason = "", "a newer memdir upgraded it"
