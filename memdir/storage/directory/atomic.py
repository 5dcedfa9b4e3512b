"""Crash-safe file replacement: one file, or several files as one all-or-nothing change.

An entry is three files (``.md``, ``.yml``, ``.emb``). Replacing each atomically is
not enough: a kill between two renames would pair new content with old metadata.
`file_transaction` therefore runs a tiny redo-log protocol:

1. write a *pending* journal under ``<root>/.memdir/txn/`` (the spare left by an earlier
   transaction renamed there, see `SPARE_JOURNAL`) whose first line names every temporary
   file it is about to create (so an interrupted staging can be cleaned up; after a power cut
   in the middle of staging, a hidden temporary file may outlive its journal);
2. stage every new file as a temporary file in its target's folder, then hand over to the
   caller's ``with`` block (memdir updates the derived index and appends the audit record
   there: if that fails — a full disk — the staging is undone and nothing has changed);
3. after it, append the journal's *commit record*: a checksum of every staged file and of
   every record appended in the block, and one of the journal itself. Then fsync, all in one
   round (`memdir.core.files.flushed_together`; a large batch — an evolution job's — is flushed
   by one ``sync`` of the filesystem instead, see `_SYNC_EACH_UP_TO`): the journal, each staged
   file, the audit record, the folders holding them (their names) and the folders of the
   previous transaction's renames. The end of that flush is the commit point: the change is
   on disk, its renames can be redone from the journal;
4. rename the journal to *commit* (for lock-free readers: its files are being renamed now;
   recovery does not go by the name) and perform the renames and removals;
5. a transaction of renames only leaves its journal as `DONE_JOURNAL`: the next one flushes
   the renamed files' folders in its round (step 3) and then keeps that journal as the
   spare. One with removals flushes its folders and deletes its journal at once, for good
   (see `_finish`).

`recover` (run under the root's exclusive lock) finishes what a killed writer left. It
rolls a journal forward when its commit record is whole and every file it names holds
what the record's checksums say — each staged file still at its temporary name or
already renamed to its target, each appended record in place, the previous transaction's
renames done — and back otherwise, by deleting its temporary files: a journal cut short,
or a power cut in the middle of the flush, leaves a file that does not match, and nothing
was renamed yet then (the renames come after the flush). `DONE_JOURNAL` goes first, since
its change came before any other journal's. Every step of a roll-forward is idempotent.
Whatever instant a process dies at, the files afterwards hold the old version or the new
one, never a mixture, and a change whose audit record did not reach the disk is not applied.

A journal is a file in the root, so it may have been planted or damaged: before
`recover` acts on one, every path it names is resolved (symbolic links included) and
must lie inside the root. A journal that names anything else, or is not a regular
file, is not replayed but set aside in ``.memdir/txn-failed/`` (quarantined) with an
error in the log, and the root stays usable.

Temporary files are hidden (``.txn-….tmp``), so listings never show them.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from memdir.core.errors import UnsafeFileError
from memdir.core.files import Appended, disk_errors, flushed_together, fsync_dir, fsync_each, open_regular, private_folder, quarantine, read_regular
from memdir.core.paths import confine, unsafe_file

log = logging.getLogger(__name__)

PRIVATE_DIR = Path(".memdir")
TXN_DIR = PRIVATE_DIR / "txn"
FAILED_DIR = PRIVATE_DIR / "txn-failed"
DONE_JOURNAL = PRIVATE_DIR / "txn-done"
"""The journal of the last change of renames only, whose renames are not flushed yet: the next
transaction flushes their folders with its own files (one round of flushes a change, not two)
and then keeps it as the spare. Until then a power cut may undo those renames, and recovery
rolls them forward from it."""
SPARE_JOURNAL = PRIVATE_DIR / "txn-spare"
"""A finished journal kept for the next transaction to write its own over: renaming a file costs
less than creating one and deleting it. Recovery never reads it, and a journal whose text names
another transaction than its file name (the spare's old text, where the new one did not reach the
disk) is read as cut short."""
PENDING_SUFFIX = ".pending"
COMMIT_SUFFIX = ".commit"
_JOURNAL_VERSION = 2
_NAMED_VERSION = 1
"""Journals of older memdir versions: no commit record, committed when renamed to *commit* (after
a flush of the journal's folder of its own); still recovered so."""
_TEMP_PREFIX = ".txn-"  # every file a transaction stages; a journal renames nothing else into place
_SYNC_EACH_UP_TO = 8
"""Staged files fsynced one by one; a larger transaction writes them all, then makes them durable
with one ``sync()`` (Linux waits for it to finish): 10K rewritten ``.yml`` files cost one
flush, not 10K (~1 ms each). Elsewhere ``sync`` may return before the data is on disk, so
each file is fsynced as for a small transaction."""
_ONE_SYNC = sys.platform.startswith("linux")
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)  # (a pipe opens at once, and is refused)


def txn_dir(root: Path) -> Path:
    """Where journals of unfinished transactions live."""
    return Path(root) / TXN_DIR


def _write_new_file(path: Path, data: bytes) -> int:
    """Create ``path`` (it must not exist), write ``data`` fully, and return the open descriptor
    (the caller flushes it, see `flushed_together`, and closes it)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        _write_all(fd, data)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _open_folder(folder: Path) -> int | None:
    """A descriptor of ``folder`` to flush its entries with (None where folders cannot be opened: Windows)."""
    try:
        return os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return None


def _temp_name(target: Path, txid: str, index: int) -> Path:
    # Short and hidden: entry names may already use the 255-byte name limit.
    return target.parent / f"{_TEMP_PREFIX}{txid}-{index}.tmp"


def _relative(root: Path, path: Path) -> str:
    text, prefix = os.fspath(path), os.path.join(os.fspath(root), "")
    if text.startswith(prefix) and not {"", ".", ".."}.intersection(parts := text[len(prefix):].split(os.sep)):
        return "/".join(parts)  # (what a writer gives: a path made under the root)
    relative = os.path.relpath(path, root)
    if relative.startswith("..") or os.path.isabs(relative):
        raise ValueError(f"{path} is not inside the memory root {root}; transactions only touch files under it.")
    return Path(relative).as_posix()


def _inside(root: Path, relative: object, confined: set[Path] | None = None) -> Path:
    """A journal's relative path as a path under ``root`` whose folder, links resolved, is inside it.

    The file itself may be a symbolic link (a rename replaces the link, a removal removes
    it; neither touches what it points at); the folder it sits in may not lead out.
    ``confined`` holds folders found inside already (in one transaction, under the lock,
    a folder that passed does not change): they are not resolved again.

    Raises:
        UnsafeFileError: the path is not relative, climbs out, or leads outside through a link.
    """
    if not isinstance(relative, str) or not relative or os.path.isabs(relative) or ".." in Path(relative).parts:
        raise unsafe_file(root, root / str(relative), "outside")
    path = root / relative
    if confined is None or path.parent not in confined:
        confine(root, path.parent)
        if confined is not None:
            confined.add(path.parent)
    return path


def _check_journal(root: Path, journal: dict) -> None:
    """Raise if a journal read from disk names anything but files inside the root (see `_inside`)."""
    renames, removals = journal.get("renames", []), journal.get("removals", [])
    if not isinstance(renames, list) or not isinstance(removals, list):
        raise ValueError("its 'renames' and 'removals' are not lists")
    for pair in renames:
        if not isinstance(pair, list) or len(pair) != 2 or not str(pair[0]).rsplit("/", 1)[-1].startswith(_TEMP_PREFIX):
            raise ValueError(f"the rename {pair!r} is not a [temporary file, target] pair")
        for relative in pair:
            _inside(root, relative)
    for relative in removals:
        _inside(root, relative)


@contextmanager
def file_transaction(
    root: Path,
    writes: Mapping[Path, bytes],
    removals: Iterable[Path] = (),
    *,
    on_commit: Callable[[], None] | None = None,
) -> Iterator[Mapping[Path, Path]]:
    """Write every file in ``writes`` and delete every file in ``removals``, all or nothing.

    A context manager: entering stages the change (written, not yet flushed) and gives {target: its
    staged temporary file} (a rename keeps a file's size and mtime, so the staged files show
    what the targets will be); leaving the block seals the journal with its commit record and
    flushes it with the staged files and the records appended in the block
    (`memdir.core.files.flushed_together`), which commits, unless the block raised: then the
    staging is undone and the error propagates, and nothing was changed.

    Use it under the root's exclusive lock (a concurrent `recover` would otherwise
    treat this transaction's staging files as orphans). Missing files in
    ``removals`` are fine. Folders for new files are created.

    Args:
        root: the memory root; every path must lie inside it.
        writes: target path -> complete new content.
        removals: paths to delete in the same transaction.
        on_commit: called right after the commit point, before any file is renamed (the
            root's change counter is raised there, see `memdir.storage.directory.changes`); it must
            not raise, since the transaction cannot be undone any more.

    Raises:
        DiskFullError: no room to stage the change; nothing was changed.
        ReadOnlyRootError: the root's filesystem is read-only; nothing was changed.
        OSError: staging failed otherwise (permissions); nothing was changed.
    """
    root = Path(root)
    removals = [Path(p) for p in removals]
    txid = uuid.uuid4().hex

    renames = [(_temp_name(Path(target), txid, i), Path(target)) for i, target in enumerate(writes)]
    targets = [target for _, target in renames] + removals
    for folder in {path.parent for path in targets}:
        confine(root, folder)  # no folder on the way leads out of the root
    for path in targets:
        if path.is_dir() and not path.is_symlink():
            # Caught now, because after the commit point a failing rename could not be undone.
            raise unsafe_file(root, path, "special", "a folder")
    intent = _intent(root, txid, renames, removals)
    created: list[Path] = []  # entry folders this transaction made, removed again if it fails
    made: set[Path] = set()  # folders there (or made) already
    with disk_errors(root):
        journal_dir = private_folder(root, TXN_DIR)
        pending = journal_dir / f"{txid}{PENDING_SUFFIX}"
        committed = journal_dir / f"{txid}{COMMIT_SUFFIX}"
        one_sync = _ONE_SYNC and len(renames) > _SYNC_EACH_UP_TO
        staged: list[int] = []  # descriptors still open, to be flushed (a large change: none, one sync)
        journal: int | None = None
        sealed = False

        previous = _unflushed(root)

        def seal(appended: Sequence[Appended]) -> None:
            nonlocal sealed
            assert journal is not None  # (opened before the block)
            _write_all(journal, _commit_record(root, intent, writes.values(), appended, previous.temps))
            sealed = True

        try:
            journal = _reused_journal(root, pending, intent)
            for (temp, target), data in zip(renames, writes.values()):
                if target.parent not in made:
                    created += _make_folders(target.parent)
                    made.add(target.parent)
                _keep_open(staged, _write_new_file(temp, data), not one_sync)
            # Flushed with the staged files: the journal's folder and theirs (the names, before any
            # rename) and those of the previous change's renames (before its journal is reused).
            for folder in {journal_dir, *made, *previous.folders}:
                if (fd := _open_folder(folder)) is not None:
                    _keep_open(staged, fd, not one_sync)
            flushed = [fd for fd in staged if not one_sync] + [journal]
            with flushed_together(flushed, one_sync=one_sync, before_flush=seal):  # written first, then flushed together
                yield {target: temp for temp, target in renames}
            # The commit point is behind: the commit record and all it names are on disk. The
            # new name tells lock-free readers that files are being renamed (recovery goes by the record).
            os.replace(pending, committed)
        except BaseException:
            _unlink_quietly(pending)  # first: a sealed journal must not outlive the files it names
            if sealed:
                fsync_dir(journal_dir)
            for temp, _ in renames:
                _unlink_quietly(temp)
            for folder in reversed(created):
                _remove_empty_folder(folder)
            raise
        finally:
            for fd in staged:
                os.close(fd)
            if journal is not None:
                os.close(journal)
    # From here on the transaction is committed: if anything below is interrupted,
    # `recover` rolls it forward, so nothing may be undone — and a failure is no failure
    # of the change, which the next lock holder (this process's next call, at the latest)
    # completes from the journal.
    if on_commit is not None:
        on_commit()
    try:
        if previous.temps:
            os.replace(root / DONE_JOURNAL, root / SPARE_JOURNAL)  # its renames are on disk now
        _roll_forward(renames, removals, bool(removals))
        left = _Unflushed(made, [_relative(root, temp) for temp, _ in renames])
        _finish(root, committed, journal_dir, durable=bool(removals), left=left)
    except OSError as exc:
        log.warning("Memory transaction %s is committed; finishing it failed (%s), so recovery will", txid, exc)


def commit_files(root: Path, writes: Mapping[Path, bytes], removals: Iterable[Path] = (), **options: Any) -> None:
    """A `file_transaction` with nothing to do between staging and commit."""
    with file_transaction(root, writes, removals, **options):
        pass


def remove_unjournaled(removals: Iterable[Path]) -> None:
    """Delete ``removals`` in the order given without a journal: the last resort of a delete
    on a disk so full that not even a journal fits (deleting is how the user makes room).

    Not atomic across files; callers list the file that makes an entry exist (its ``.md``)
    first, so the entry is gone at once and a kill before the rest can only leave sidecars
    behind that no listing shows.
    """
    touched = set()
    for path in removals:
        if _unlink_quietly(path):
            touched.add(path.parent)
    for folder in touched:
        fsync_dir(folder)


def _make_folders(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents; the ones created, outermost first."""
    missing = []
    while not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir(exist_ok=True)
    return missing[::-1]


def _remove_empty_folder(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # not empty (another entry's files arrived meanwhile) or already gone


def _intent(root: Path, txid: str, renames: Sequence[tuple[Path, Path]], removals: Sequence[Path]) -> bytes:
    """The journal's first line: which transaction it is, what it stages, renames and removes."""
    journal = {
        "version": _JOURNAL_VERSION,
        "txid": txid,
        "renames": [[_relative(root, temp), _relative(root, target)] for temp, target in renames],
        "removals": [_relative(root, path) for path in removals],
    }
    return json.dumps(journal, ensure_ascii=False).encode("utf-8") + b"\n"


def _commit_record(root: Path, intent: bytes, contents: Iterable[bytes], appended: Sequence[Appended], after: Sequence[str]) -> bytes:
    """The journal's second line: the checksum of each staged file (in the order of the renames), each
    record appended in the block (file, offset, length, checksum) and the temporary files of the
    previous change whose renames the flush makes durable (``after``), behind a checksum of both
    lines, so that a torn record never reads as whole."""
    body = json.dumps({
        "files": [zlib.crc32(data) for data in contents],
        "appended": [[_relative(root, record.path), record.at, len(record.data), zlib.crc32(record.data)] for record in appended],
        "after": list(after),
    }, ensure_ascii=False).encode("utf-8")
    return b"%08x %s\n" % (zlib.crc32(intent + body), body)


def _sealed(intent: bytes, line: bytes) -> dict | None:
    """The commit record in ``line`` when it is whole and belongs to the journal line ``intent``."""
    check, _, body = line.partition(b" ")
    try:
        if int(check, 16) != zlib.crc32(intent + body):
            return None
        record = json.loads(body.decode("utf-8"))
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _keep_open(staged: list[int], fd: int, flushed: bool) -> None:
    """Hold ``fd`` in ``staged`` until its flush, or close it now (not flushed, or flushed by one ``sync``)."""
    if flushed:
        staged.append(fd)
    else:
        os.close(fd)


def _replay(root: Path, journal: dict) -> None:
    """Apply a committed journal read from disk, every path it names checked to lie inside the root."""
    confined: set[Path] = set()
    renames = [(_inside(root, temp, confined), _inside(root, target, confined)) for temp, target in journal.get("renames", [])]
    _roll_forward(renames, [_inside(root, removal, confined) for removal in journal.get("removals", [])])


def _roll_forward(renames: Iterable[tuple[Path, Path]], removals: Iterable[Path], flush: bool = True) -> None:
    """Perform a committed change's renames and removals, and (``flush``) fsync the folders touched.
    Idempotent: a rename whose temp file is gone already happened."""
    touched: set[Path] = set()
    for temp, target in renames:
        try:
            os.replace(temp, target)
        except FileNotFoundError:
            continue
        touched.add(target.parent)
    for path in removals:
        if _unlink_quietly(path):
            touched.add(path.parent)
    if flush:
        fsync_each(touched, fsync_dir)


def _finish(root: Path, journal_path: Path, journal_dir: Path, *, durable: bool, left: _Unflushed) -> None:
    """Retire a rolled-forward journal; ``durable``: gone for good before the lock is released.

    A journal with removals that reappeared after a power loss would replay them over a later
    transaction's files, so it is deleted once its folders are flushed, and its folder flushed
    too. One with renames only becomes `DONE_JOURNAL` (``left``: its renames), its folders
    flushed by the next transaction.
    """
    if durable:
        _unlink_quietly(journal_path)
        fsync_dir(journal_dir)
    else:
        os.replace(journal_path, root / DONE_JOURNAL)
        _LEFT[os.fspath(root)] = (journal_path.name.partition(".")[0], left)


class _Unflushed(NamedTuple):
    """The previous change's renames not flushed yet (see `DONE_JOURNAL`)."""

    folders: set[Path]
    temps: list[str]
    """Its temporary files (relative): while one is left, its renames are not all done."""


def _unflushed(root: Path) -> _Unflushed:
    """The folders of `DONE_JOURNAL`'s renames, to flush with the next change's files (a power cut
    that undid some of them was seen to when the root was opened, see `renames_lost`).

    A journal this process left there is known by its transaction id (its first bytes): it is not
    read and checked again, which would cost more than the rest of a transaction's own work here."""
    path = root / DONE_JOURNAL
    try:
        fd = os.open(path, os.O_RDONLY | _NO_FOLLOW)
    except FileNotFoundError:
        return _Unflushed(set(), [])
    except OSError:
        fd = None  # (refused below)
    if fd is not None:
        try:
            head = os.read(fd, len(_TXID_AT) + 32)
        except OSError:  # (a folder: refused below)
            head = b""
        finally:
            os.close(fd)
        left = _LEFT.get(os.fspath(root))
        if left is not None and head == _TXID_AT + left[0].encode("ascii"):
            return left[1]
    done = _done_journal(root)
    if done is None:
        return _Unflushed(set(), [])
    if done.refused is not None:
        _set_aside(root, path, f"it was refused: {done.refused}")
        return _Unflushed(set(), [])
    return _Unflushed({(root / target).parent for _, target in done.renames}, [temp for temp, _ in done.renames])


_TXID_AT = b'{"version": %d, "txid": "' % _JOURNAL_VERSION
"""How every journal starts (`_intent`), up to its transaction id."""
_LEFT: dict[str, tuple[str, _Unflushed]] = {}
"""Root -> the transaction id and renames of the journal this process last left as `DONE_JOURNAL`."""


def renames_lost(root: Path) -> bool:
    """True if a power cut undid renames of the change in `DONE_JOURNAL` (one of its temporary files is
    back), or that journal is refused: `recover` must see to it before the root is used."""
    done = _done_journal(root)
    if done is None:
        return False
    return done.refused is not None or any(os.path.lexists(root / temp) for temp, _ in done.renames)


class _Done(NamedTuple):
    """`DONE_JOURNAL` as `_done_journal` reads it."""

    renames: list[list[str]]
    """Its renames, [temporary file, target] relative to the root, each checked to lie inside it."""
    refused: str | None
    """Why it cannot be used (it cannot be read, is no regular file or names files outside the root), or None."""


def _done_journal(root: Path) -> _Done | None:
    """`DONE_JOURNAL` read and checked (`_check_journal`); None when there is none.

    Its two readers answer a refused one differently: opening the root leaves it to `recover`
    (`renames_lost`), which quarantines or discards it; a transaction sets it aside and goes on
    with nothing of it to flush (`_unflushed`).
    """
    path = root / DONE_JOURNAL
    try:
        journal = _load_journal(root, path, named=False)
        if journal is None:
            if not os.path.lexists(path):
                return None
            raise ValueError("it cannot be read")  # (a journal is whole when it gets there)
        _check_journal(root, journal)
    except (UnsafeFileError, ValueError) as exc:
        return _Done([], str(getattr(exc, "message", exc)))
    return _Done(journal["renames"], None)


def _reused_journal(root: Path, path: Path, intent: bytes) -> int:
    """The journal at ``path`` holding ``intent`` from its start, open for the commit record: the spare
    renamed there when there is one (what it held after that is left, see `_load_journal`), else a new file."""
    try:
        os.rename(root / SPARE_JOURNAL, path)
    except FileNotFoundError:
        return _write_new_file(path, intent)
    try:
        fd = os.open(path, os.O_WRONLY | _NO_FOLLOW)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise IsADirectoryError(path)
    except OSError:  # not memdir's (a link, a pipe or a folder planted there)
        log.error("The spare transaction journal %s was not memdir's: %s", path.name, quarantine(root, path, FAILED_DIR))
        return _write_new_file(path, intent)
    try:
        _write_all(fd, intent)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _unlink_quietly(path: Path) -> bool:
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False


def has_pending(root: Path, *, committed_only: bool = False) -> bool:
    """True if a transaction journal is waiting for `recover` (one cheap folder listing).

    Args:
        committed_only: count only journals past their commit point: their files are
            being renamed right now, or their writer was killed doing so.
    """
    suffix = COMMIT_SUFFIX if committed_only else ""
    try:
        with os.scandir(txn_dir(root)) as entries:
            return any(entry.name.endswith(suffix) for entry in entries)
    except (FileNotFoundError, NotADirectoryError):
        return False


def recover(root: Path) -> int:
    """Finish or undo every transaction a killed writer left behind; returns how many.

    Must run under the root's exclusive lock. Costs one folder listing when there is
    nothing to do.
    """
    root = Path(root)
    lost = renames_lost(root)
    if lost:
        _recover_done(root)  # the change before any in the journal folder: its renames go first
    if not os.path.lexists(txn_dir(root)):
        return int(lost)
    journal_dir = private_folder(root, TXN_DIR)  # a link planted there would hand us another folder's files
    names = sorted(os.listdir(journal_dir))
    for name in names:
        path = journal_dir / name
        _settle(root, path)
        _unlink_quietly(path)  # (unless it was set aside)
    if names:
        fsync_dir(journal_dir)
    return int(lost) + len(names)


def _recover_done(root: Path) -> None:
    """Finish `DONE_JOURNAL` (its renames, should a power cut have undone some), flush its folders and keep it as the spare."""
    path = root / DONE_JOURNAL
    journal = _settle(root, path, named=False)
    if journal is not None:
        fsync_each({_inside(root, target).parent for _, target in journal["renames"]}, fsync_dir)
    if os.path.lexists(path):
        os.replace(path, root / SPARE_JOURNAL)


def _settle(root: Path, path: Path, *, named: bool = True) -> dict | None:
    """Roll the journal at ``path`` forward or back (see the module docstring); the journal, None if it
    was unreadable or set aside (`_set_aside`). ``named``: its file is named after its transaction."""
    name = path.name
    try:
        journal = _load_journal(root, path, named=named)
        if journal is None:
            if os.path.lexists(path):
                # An unreadable journal was cut short before any file was staged: its first line
                # is written before the first staged file, and its record flushed before any rename.
                log.warning("Discarding unreadable transaction journal %s", path)
            return None
        _check_journal(root, journal)
        forward = _committed(root, name, journal)
    except (UnsafeFileError, ValueError) as exc:
        _set_aside(root, path, f"it was refused: {getattr(exc, 'message', exc)}")
        return None
    try:
        if forward:
            log.info("Rolling forward interrupted memory transaction %s", name)
            _replay(root, journal)
        else:
            log.info("Rolling back interrupted memory transaction %s", name)
            for temp_rel, _target in journal["renames"]:
                _unlink_quietly(_inside(root, temp_rel))
    except OSError as exc:
        _set_aside(root, path, f"it could not be finished ({exc}); the files it names may need a manual check")
        return None
    return journal


def _set_aside(root: Path, journal: Path, why: str) -> None:
    """Move (quarantine) a journal that cannot or must not be applied, so the root stays usable.

    Left in place it would make every later lock holder fail the same way. Only a change
    made behind memdir's back (say, a folder created where a file belongs, or a planted
    journal naming files outside the root) gets here; the journal is kept for a person
    to inspect (see `memdir.core.files.quarantine`).
    """
    done = quarantine(root, journal, FAILED_DIR)
    log.error("Memory transaction journal %s was not replayed and is quarantined (%s): %s.", journal.name, done, why)


def _load_journal(root: Path, path: Path, *, named: bool = True) -> dict | None:
    """The journal at ``path`` (its commit record, whole or None, under ``"sealed"``), None if missing,
    unreadable or not JSON, or (``named``) if it names another transaction than its file name does;
    `UnsafeFileError` if it is no regular file in the root."""
    try:
        raw = read_regular(root, path)
        intent, _, rest = raw.partition(b"\n")
        journal = json.loads(intent.decode("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(journal, dict) or journal.get("version") not in (_JOURNAL_VERSION, _NAMED_VERSION):
        return None
    if named and journal["version"] == _JOURNAL_VERSION and journal.get("txid") != path.name.partition(".")[0]:
        return None  # a reused journal's old text: the new one was cut short
    journal.setdefault("renames", [])
    journal.setdefault("removals", [])
    journal["sealed"] = _sealed(intent + b"\n", rest.partition(b"\n")[0]) if journal["version"] == _JOURNAL_VERSION else None
    return journal


def _committed(root: Path, name: str, journal: dict) -> bool:
    """True if the journal's change is to be rolled forward: its commit record is whole and every
    file it names holds what the record says (see the module docstring).

    Raises:
        UnsafeFileError: a file it names is no regular file inside the root.
        ValueError: the commit record does not fit the journal.
    """
    if journal["version"] == _NAMED_VERSION:
        return name.endswith(COMMIT_SUFFIX)
    sealed = journal["sealed"]
    if sealed is None:
        return False
    files, appended = sealed.get("files"), sealed.get("appended")
    if not isinstance(files, list) or len(files) != len(journal["renames"]) or not isinstance(appended, list):
        raise ValueError("its commit record does not match its renames")
    for (temp, target), checksum in zip(journal["renames"], files):
        staged = _inside(root, temp)
        if _checksum(root, staged if os.path.lexists(staged) else _inside(root, target)) != checksum:
            return False  # cut short by a power cut in the flush, before anything was renamed
    if any(os.path.lexists(_inside(root, temp)) for temp in sealed.get("after") or []):
        return False  # the previous change's renames were not all done: this change's flush had not ended
    for record in appended:
        if not isinstance(record, list) or len(record) != 4:
            raise ValueError(f"the appended record {record!r} is not [file, offset, length, checksum]")
        relative, at, length, checksum = record
        if _checksum(root, _inside(root, relative), int(at), int(length)) != checksum:
            return False  # the change's audit record did not reach the disk: the change must not either
    return True


def _checksum(root: Path, path: Path, at: int = 0, length: int = -1) -> int | None:
    """The checksum of ``length`` bytes of the file at ``path`` from ``at`` (-1: to its end); None if it is missing or shorter."""
    try:
        with open_regular(root, path) as handle:
            handle.seek(at)
            data = handle.read(length)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return zlib.crc32(data) if length < 0 or len(data) == length else None
