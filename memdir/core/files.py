"""Opening the files of a memory root safely, and replacing one file atomically.

Every file of a root memdir reads (an entry's ``.md``, ``.yml`` and ``.emb``, a stub, a
transaction or defrag journal, derived data) is opened by `open_regular`: confined to
the root with symbolic links resolved, never in blocking mode, and only if it is a
regular file — so a symbolic link planted in a root cannot make memdir read a file
elsewhere, and a named pipe cannot make it wait forever. `stat_regular` answers
"is there an entry file here" by the same rules, and `private_folder` hands out the
folders of ``.memdir/`` only when they are real folders inside the root.

Replacing: readers see the old bytes or the new ones, never a prefix.
One implementation for every file memdir rewrites on its own — derived data under
``.memdir/`` (the shared total, the vector snapshot), the cached ONNX graph, files the
workspace tools write. Entries themselves (three files changing together) go through
`memdir.storage.directory.atomic.commit_files`, which journals the change so a killed writer is
rolled forward or back.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, NamedTuple, TypeVar

from memdir.core.errors import DiskFullError, MemdirError, ReadOnlyRootError, UnsafeFileError
from memdir.core.paths import confine, confined_stat, inside_real_root, os_path_error, unsafe_file

# Never blocking: a named pipe swapped in after the type check opens at once instead of
# waiting for a writer (the check of the opened file then refuses it). O_NOFOLLOW: the
# path handed to open is already resolved, so a symbolic link met there was swapped in.
_SAFE_FLAGS = (
    getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
)
_READ_FLAGS = os.O_RDONLY | _SAFE_FLAGS
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | _SAFE_FLAGS
_OPEN_FILES_KNOWN = os.path.isdir("/proc/self/fd")  # Linux: where each open file really is
_FLUSH_THREADS = 8
"""Files `fsync_each` flushes at the same time."""
_NO_SPACE = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}
T = TypeVar("T")

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a device"),
    (stat.S_ISBLK, "a device"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "a special file")


def _check_regular(root: Path, path: Path | str, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise unsafe_file(root, path, "special", _kind(st.st_mode))


def open_regular(root: Path, path: Path | str) -> BinaryIO:
    """The regular file at ``path``, inside ``root``, open for reading (binary; use it in ``with``).

    Raises:
        FileNotFoundError, NotADirectoryError: nothing is there (callers treat it as missing).
        UnsafeFileError: it resolves outside the root, is not a regular file (a named
            pipe, socket, device or folder), its symbolic links loop, or its path is
            too long for the operating system.
    """
    return _open_existing(root, path, _READ_FLAGS, "rb")


def _open_existing(root: Path, path: Path | str, flags: int, mode: str) -> BinaryIO:
    """The regular file at ``path`` inside ``root``, opened with ``flags`` (see `open_regular`)."""
    real = _to_open(root, path)
    try:
        fd = os.open(real, flags)
    except OSError as exc:
        raise _open_error(root, path, real, exc) from exc
    return _checked(root, path, fd, mode)


def _to_open(root: Path, path: Path | str) -> str:
    """What to open for ``path``: a regular file's path, resolved and confined where that is needed first.

    Where the kernel tells where an opened file is (`_check_opened`), a path whose last
    part is no link is opened as it is and checked once open — a folder on the way that
    leads out shows there, before a byte is read — which saves resolving every folder of
    it on every read. A last part that is a link is resolved and confined before opening.
    A named pipe or device is refused before it is opened.
    """
    if not _OPEN_FILES_KNOWN:
        real, st = confined_stat(root, path)
    else:
        try:
            st = os.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            raise
        except OSError as exc:
            raise os_path_error(root, path, exc) from exc
        real = os.fspath(path)
        if stat.S_ISLNK(st.st_mode):
            real, st = confined_stat(root, path)
    if st is not None:
        _check_regular(root, path, st)
    return real


def append_regular(root: Path, path: Path | str) -> BinaryIO:
    """The regular file at ``path`` inside ``root`` (created when missing), open for appending (binary).

    For memdir's own append-only records (the defrag journal): a symbolic link or anything
    but a regular file there is refused, as in `open_regular`.
    """
    real = confine(root, path)
    try:
        fd = os.open(real, _APPEND_FLAGS, 0o644)
    except OSError as exc:
        raise _open_error(root, path, real, exc) from exc
    return _checked(root, path, fd, "ab")


def append_bytes(root: Path, path: Path, data: bytes, *, cut: Callable[[int], int] | None = None) -> int:
    """Append ``data`` to memdir's own record ``path`` with one ``write``, then make it durable; the file's new size.

    An existing file is opened as `open_regular` opens one (its folders are not touched); a
    missing one is created, in folders created as memdir's own (`private_folder`: never a
    link), and then its folder and those it created are synced too, so the new file's name is
    as durable as its bytes. The write is synced with ``fdatasync`` (the bytes and the size,
    not the times), at once or, inside a `flushed_together` block, with that block's flushes.
    ``cut(size)`` gives the length to cut the file to first (a tail a killed writer left; the
    caller holds the root's lock). A short write (a full disk) is undone.
    """
    try:
        handle = _open_existing(root, path, _APPEND_FLAGS & ~os.O_CREAT, "ab")
        created = False
    except (FileNotFoundError, NotADirectoryError):
        private_folder(root, Path(path).parent.relative_to(root), durable=True)
        handle, created = append_regular(root, path), True
    with handle:
        fd = handle.fileno()
        size = os.fstat(fd).st_size
        keep = cut(size) if cut is not None else size
        if keep < size:
            os.ftruncate(fd, keep)
        written = os.write(fd, data)
        if written != len(data):
            os.ftruncate(fd, keep)
            raise OSError(errno.ENOSPC, f"short write: {written} of {len(data)} bytes (is the disk full?)", os.fspath(path))
        held: list[Appended] | None = getattr(_JOINED, "appended", None)
        if held is None:
            _sync_data(fd)
        else:  # flushed with the staged files of the change it belongs to (`flushed_together`)
            held.append(Appended(os.dup(fd), Path(path), keep, data))
    if created:  # the new file's name
        fsync_dir(Path(path).parent)
    return keep + written


class Appended(NamedTuple):
    """A record `append_bytes` appended inside a `flushed_together` block, flushed with the block's files."""

    fd: int
    """A descriptor of the file, open until the flush."""
    path: Path
    at: int
    """The file's size before the record: where it starts."""
    data: bytes


_JOINED = threading.local()  # .appended: the `Appended` records a `flushed_together` block flushes


@contextmanager
def flushed_together(
    files: Collection[int], *, one_sync: bool = False, before_flush: Callable[[Sequence[Appended]], None] | None = None
) -> Iterator[None]:
    """Run the block, then make the open ``files`` (descriptors, closed by the caller) durable
    together with every record `append_bytes` appended inside it (this thread's): one round of
    flushes where there would be two in turn.

    A change's audit record is appended between staging its files and its commit point; both
    must be on disk before that point, and nothing needs one on disk before the other. Should
    the block raise (or a flush fail), the change is undone: the records appended in it are cut
    off again (the caller holds the root's lock, so nobody appended after them). The staged
    files are flushed through the descriptors they were written with: opening each again just
    to flush it costs a path lookup.

    Args:
        one_sync: flush with one ``sync()`` of the filesystems instead (a large change, see
            `memdir.storage.directory.atomic`).
        before_flush: called with the records appended in the block once it has run, before the
            flush (a transaction writes its commit record there, naming them).

    Raises:
        OSError: a flush failed (the first such error, once all have ended); what ``before_flush`` raised.
    """
    outer = getattr(_JOINED, "appended", None)
    held: list[Appended] = []
    _JOINED.appended = held
    failed = True
    try:
        yield
        if before_flush is not None:
            before_flush(held)
        if one_sync:
            os.sync()
        else:
            fsync_each([*((os.fsync, fd) for fd in files), *((_sync_data, record.fd) for record in held)], _flush_fd)
        failed = False
    finally:
        _JOINED.appended = outer
        for record in reversed(held):
            if failed:
                with contextlib.suppress(OSError):  # (at worst the record of a change that failed stays)
                    os.ftruncate(record.fd, record.at)
            os.close(record.fd)


def _flush_fd(target: tuple[Callable[[int], None], int]) -> None:
    flush, fd = target
    flush(fd)


def _sync_data(fd: int) -> None:
    """Make the bytes written to ``fd`` (and its size) durable."""
    sync = getattr(os, "fdatasync", os.fsync)  # macOS and Windows have no fdatasync
    sync(fd)


def _open_error(root: Path, path: Path | str, real: str, exc: OSError) -> OSError | UnsafeFileError:
    """A failed open as memdir's clear error where it is about the file (a socket opens with ENXIO, a folder
    opened for writing with EISDIR)."""
    if exc.errno in (errno.ENXIO, errno.ENODEV, errno.EOPNOTSUPP, errno.EISDIR):
        with contextlib.suppress(OSError):
            return unsafe_file(root, path, "special", _kind(os.stat(real).st_mode))
    return os_path_error(root, path, exc)


def _checked(root: Path, path: Path | str, fd: int, mode: str) -> BinaryIO:
    """``fd`` as a file object, once the opened file itself is known to be a regular file inside the root."""
    try:
        _check_regular(root, path, os.fstat(fd))  # the opened file itself: no swap in between
        _check_opened(root, path, fd)
        return os.fdopen(fd, mode, buffering=0)  # type: ignore[return-value]  # raw FileIO: no copy through a buffer
    except BaseException:
        os.close(fd)
        raise


def _check_opened(root: Path, path: Path | str, fd: int) -> None:
    """Refuse ``fd`` unless the file it holds is inside the root, as the kernel (Linux) tells.

    Also catches a folder swapped for a link between a check and the open.
    """
    try:
        opened = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        confine(root, path)  # the kernel cannot tell: resolve the path instead
        return
    if not inside_real_root(root, opened):
        raise unsafe_file(root, path, "outside")


def read_regular(root: Path, path: Path | str, limit: int = -1) -> bytes:
    """The bytes (the first ``limit`` of them, when given) of the regular file at ``path`` (see `open_regular`)."""
    with open_regular(root, path) as handle:
        return handle.read(limit)


def stat_regular(root: Path, path: Path | str) -> os.stat_result | None:
    """The ``stat`` of the regular file at ``path`` inside ``root``; None when nothing is there.

    Raises:
        UnsafeFileError: as `open_regular`.
    """
    _, st = confined_stat(root, path)
    if st is not None:
        _check_regular(root, path, st)
    return st


def quarantine(root: Path, path: Path, relative_folder: Path | str) -> str:
    """Take a file memdir must not use out of the way: into ``root/relative_folder``, for a person to inspect.

    Only a regular file (or a folder) is moved; a symbolic link, named pipe or the like holds
    nothing to inspect (and kept among memdir's own files it would make the root refuse to
    open), so it is removed — the link itself, never what it points at.

    Returns:
        What was done, for the log: ``"moved to <folder>"`` or ``"removed (a symbolic link to …)"``.
    """
    st = os.lstat(path)
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        folder = private_folder(root, relative_folder)
        os.replace(path, folder / path.name)
        return f"moved to {folder}"
    what = f"a symbolic link to {os.readlink(path)}" if stat.S_ISLNK(st.st_mode) else _kind(st.st_mode)
    os.unlink(path)
    return f"removed ({what})"


def private_folder(root: Path, relative: Path | str, *, create: bool = True, durable: bool = False) -> Path:
    """``root/relative`` (created when missing), refusing a symbolic link or anything but a folder on the way.

    memdir's own folders (``.memdir/`` and those under it, ``threads/`` and each thread's) are
    never links: one planted there would send journals, indexes, thread logs and derived files
    outside the root.

    Args:
        create: False for readers, which must not create anything: a missing folder raises
            FileNotFoundError instead.
        durable: sync the folder holding each folder made, so that its name survives a power
            cut (what is then written inside it is only as durable as the way to it).

    Raises:
        UnsafeFileError: a part of the way is a symbolic link or not a folder.
    """
    folder = Path(root)
    for part in Path(relative).parts:
        folder = folder / part
        try:
            try:
                st = os.lstat(folder)  # there already, as nearly always: one look
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):  # (made meanwhile, or not a folder: reported below)
                    os.mkdir(folder)
                    if durable:
                        fsync_dir(folder.parent)
                st = os.lstat(folder)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise os_path_error(root, folder, exc) from exc
        if stat.S_ISLNK(st.st_mode):
            raise unsafe_file(root, folder, "link")
        if not stat.S_ISDIR(st.st_mode):
            raise unsafe_file(root, folder, "special", _kind(st.st_mode))
    return folder


def fsync_each(paths: Collection[T], flush: Callable[[T], None]) -> None:
    """``flush`` (`fsync_dir`, say) every path in ``paths``, all at once.

    Requests that wait on the disk together are served together: the filesystem's journal
    commits them as one and the disk flushes its cache once, where one after the other
    each would wait for a flush of its own (~1 ms on a virtual disk; four files flushed
    together take about the time of one).

    Raises:
        OSError: a flush failed (the first such error, once all have ended).
    """
    if not paths:
        return
    first, *rest = paths
    started = [_flushers().submit(flush, path) for path in rest]
    try:
        flush(first)  # this thread's own share: one hand-over fewer
    finally:
        futures.wait(started)
    for flushed in started:
        flushed.result()


_FLUSHERS: tuple[int, ThreadPoolExecutor] | None = None
_FLUSHERS_LOCK = threading.Lock()


def _flushers() -> ThreadPoolExecutor:
    """This process's threads for `fsync_each` (a forked child makes its own: threads do not survive a fork)."""
    global _FLUSHERS
    with _FLUSHERS_LOCK:
        if _FLUSHERS is None or _FLUSHERS[0] != os.getpid():
            _FLUSHERS = (os.getpid(), ThreadPoolExecutor(_FLUSH_THREADS, thread_name_prefix="memdir-fsync"))
        return _FLUSHERS[1]


def fsync_dir(path: Path) -> None:
    """Make renames and unlinks inside ``path`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # e.g. Windows: folders cannot be opened, and renames are durable there anyway
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _disk_error(exc: OSError, root: object) -> MemdirError | None:
    if exc.errno is not None and exc.errno in _NO_SPACE:
        return DiskFullError(root, os.strerror(exc.errno))
    if exc.errno == errno.EROFS:
        return ReadOnlyRootError(root, "its filesystem is mounted read-only")
    return None


@contextmanager
def disk_errors(root: object) -> Iterator[None]:
    """Raise an OS error that means a full disk (or quota) or a read-only filesystem under
    ``root`` as memdir's `DiskFullError` / `ReadOnlyRootError`; others pass unchanged."""
    try:
        yield
    except OSError as exc:
        translated = _disk_error(exc, root)
        if translated is None:
            raise
        raise translated from exc


@contextmanager
def replacing(
    path: Path, *, root: Path | None = None, durable: bool = True, keep_mode: bool = False
) -> Iterator[BinaryIO]:
    """A binary file whose content replaces ``path`` when the block ends without an error.

    The data goes to a hidden temporary file beside ``path`` (same filesystem, so the
    final rename is atomic); an error, or a kill, leaves ``path`` as it was.

    Args:
        root: the memory root ``path`` must stay inside: its folder is resolved and confined
            (`confine`) and the file is written there, so a folder on the way that is a link
            out of the root is refused. (A link at ``path`` itself is replaced, never followed.)
        durable: fsync the data and the folder, so the new content survives a power cut;
            derived data that is rebuilt when lost can skip the cost.
        keep_mode: give the new file the permission bits of the one it replaces.
    """
    path = Path(path)
    if root is not None:
        path = Path(confine(root, path.parent)) / path.name
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if keep_mode and path.exists() else None
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:100]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)


def replace_file(
    path: Path, data: bytes, *, root: Path | None = None, durable: bool = True, keep_mode: bool = False
) -> None:
    """Replace ``path`` with ``data`` atomically (see `replacing`)."""
    with replacing(path, root=root, durable=durable, keep_mode=keep_mode) as handle:
        handle.write(data)


__all__ = [
    "append_bytes", "append_regular", "disk_errors", "fsync_dir", "open_regular", "private_folder", "quarantine",
    "read_regular", "replace_file", "replacing", "stat_regular",
]
