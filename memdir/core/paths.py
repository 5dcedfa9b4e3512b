"""Memory paths: one canonical spelling per entry, and never a way out of the root.

A *logical path* is what tools and users see: ``concept/ruby/classes.md``.
`normalize_path` turns any accepted spelling (``concept/ruby/classes``,
``memory://concept/ruby//classes.md``, surrounding spaces) into that one form,
so ``x`` and ``x.md`` always name the same entry — the read tracker, the index
and the files all key on it. `resolve_in_root` maps a logical path to the file
that holds it and refuses anything that, after symlinks, lies outside the root;
`confine` is that check for any file of the root (sidecars, journals, ``.memdir/``).
"""

from __future__ import annotations

import errno
import functools
import os
import re
import stat
import unicodedata
from pathlib import Path

from memdir.core.errors import InvalidPathError, UnsafeFileError

MEMORY_SCHEME = "memory://"
ENTRY_SUFFIX = ".md"
RESERVED_FOLDERS = {
    "threads": "working-memory threads", "evolution": "the evolution jobs' records", "audit": "the audit log",
}
"""Top-level folders of the root that hold other records (thread event logs, evolution job runs and
importance history, the audit log), never entries: each name with what it holds, for the refusal's message."""
MAX_PATH_LENGTH = 1024
MAX_SEGMENT_BYTES = 255
MAX_STEM_BYTES = MAX_SEGMENT_BYTES - len(".yml")  # the longest of an entry's three file suffixes
# Room for the hidden temporary file a write stages beside an entry ('.txn-<32 hex>-<n>.tmp'):
# the whole path of that file must fit the operating system's limit too.
STAGING_NAME_BYTES = 48
_DEFAULT_PATH_MAX = 4096  # Linux's PATH_MAX, for systems that do not say

# SwarmMemory's forbidden characters: invalid on common filesystems.
_FORBIDDEN_CHARS = re.compile(r'[<>:"|?*]')
_SLASHES = re.compile(r"/{2,}")


def _invalid(path: str, why: str, hint: str = "") -> InvalidPathError:
    return InvalidPathError(
        path,
        f"Invalid memory path {path!r}: {why}.",
        hint or "Use a relative path such as 'concept/ruby/classes.md'.",
    )


# Invisible characters that make two different names look alike (or reverse how a name
# reads: U+202E): zero-width space, direction marks, bidi embeddings/overrides/isolates,
# word joiner, BOM. Zero-width (non-)joiners stay allowed: some scripts and emoji need them.
_INVISIBLE = frozenset("\u200b\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2060\u2066\u2067\u2068\u2069\ufeff")
_ENTRY_FILE_SUFFIXES = (".md", ".yml", ".emb")


def has_control_char(text: str) -> bool:
    """Control characters, line/paragraph separators and the invisible characters above."""
    return any(unicodedata.category(ch) in ("Cc", "Zl", "Zp") or ch in _INVISIBLE for ch in text)


def normalize_path(path: str) -> str:
    """Return the canonical logical path for ``path``, or raise `InvalidPathError`.

    Rules (SwarmMemory's, plus fixes): strip an optional ``memory://`` prefix; collapse
    repeated slashes; drop a trailing slash; NFC-normalise; refuse leading or trailing
    whitespace (of the path or any of its names), absolute paths, ``.``/``..`` segments, hidden segments (``.memdir`` holds
    derived data), backslashes, NUL, control and invisible characters and ``<>:"|?*``,
    folder names ending in ``.md``/``.yml``/``.emb`` (they would collide with an entry's
    files); append ``.md`` when missing.
    """
    if not isinstance(path, str):
        raise _invalid(str(path), "a path must be a string")
    return _normalized(path)


@functools.lru_cache(maxsize=16_384)
def _normalized(path: str) -> str:
    """`normalize_path` of a string. Cached: a pure function of its argument, and a bulk change
    (an evolution job's batch) passes each path through it several times, ~15 µs each."""
    if has_control_char(path):
        raise _invalid(
            path.encode("unicode_escape").decode(),
            "it contains a NUL, control or invisible character",
            "Remove control and invisible characters (newlines, tabs, NUL, zero-width or direction marks) from the path.",
        )
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise _invalid(
            path.encode("utf-8", "backslashreplace").decode(),
            "it is not valid Unicode (it holds a lone surrogate)",
            "Use ordinary characters in the path.",
        ) from None
    if not path.strip():
        raise _invalid(path, "the path is empty")
    if path != path.strip():
        raise _invalid(path, "it starts or ends with whitespace",
                       f"Remove the spaces around it: {path.strip()!r}.")
    text = unicodedata.normalize("NFC", path)
    if text[: len(MEMORY_SCHEME)].lower() == MEMORY_SCHEME:
        text = text[len(MEMORY_SCHEME):]
    if not text:
        raise _invalid(path, "the path is empty")
    if "://" in text:
        raise _invalid(path, "it holds a URL scheme ('://'); only one 'memory://' prefix is accepted, at the start")
    if "\\" in text:
        raise _invalid(path, "backslashes are not allowed", "Separate folders with '/', e.g. 'concept/ruby/classes.md'.")
    if text.startswith("/"):
        raise _invalid(path, "absolute paths are not allowed", "Paths are relative to the memory root, e.g. 'fact/api.md'.")
    if _FORBIDDEN_CHARS.search(text):
        raise _invalid(path, 'it contains one of the characters < > : " | ? *')
    text = _SLASHES.sub("/", text).rstrip("/")
    segments = text.split("/")
    for segment in segments[:-1]:
        if segment.lower().endswith(_ENTRY_FILE_SUFFIXES):
            raise _invalid(
                path,
                f"the folder name {segment!r} ends in an entry file's suffix (.md, .yml or .emb)",
                f"Name the folder without it, e.g. {segment.rsplit('.', 1)[0] + '/'!r}.",
            )
    if segments[0].lower() in RESERVED_FOLDERS and len(segments) > 1:
        what = RESERVED_FOLDERS[segments[0].lower()]
        raise _invalid(path, f"the top-level folder {segments[0]!r} is reserved for {what}",
                       f"Put the entry under another folder, e.g. 'experience/{segments[0]}/…'.")
    for segment in segments:
        if segment in (".", ".."):
            raise _invalid(path, "'.' and '..' segments are not allowed (no parent directory references)")
        if segment != segment.strip():
            raise _invalid(path, "a folder or file name starts or ends with whitespace")
        if segment.startswith("."):
            raise _invalid(path, f"hidden names such as {segment!r} are reserved")
        if len(segment.encode()) > MAX_SEGMENT_BYTES:
            raise _invalid(path, f"a name is longer than {MAX_SEGMENT_BYTES} bytes")
    if text.lower().endswith(ENTRY_SUFFIX):
        text = text[: -len(ENTRY_SUFFIX)] + ENTRY_SUFFIX  # 'x.MD' is the entry 'x.md', as 'x' is
    else:
        text += ENTRY_SUFFIX
    # The sidecars ('.yml', '.emb') are one byte longer than '.md': every file of the entry must fit.
    if len(disk_stem(text).rsplit("/", 1)[-1].encode()) > MAX_STEM_BYTES:
        raise _invalid(
            path,
            f"the entry's name is longer than {MAX_STEM_BYTES} bytes (its files add '.md', '.yml', '.emb')",
            "Use a shorter name; put detail in the title or the content.",
        )
    if text == ENTRY_SUFFIX or text.endswith("/" + ENTRY_SUFFIX):
        raise _invalid(path, "the entry has no name")
    if len(text) > MAX_PATH_LENGTH:
        raise _invalid(path, f"the path is longer than {MAX_PATH_LENGTH} characters")
    return text


def memory_uri(path: str) -> str:
    """``memory://path`` (a path already carrying the scheme is left as it is)."""
    return path if path.startswith(MEMORY_SCHEME) else f"{MEMORY_SCHEME}{path}"


def link_target(link: object) -> str | None:
    """The normalised path a ``related`` value names (``memory://x.md``, ``x.md`` or ``x``), or None."""
    try:
        return normalize_path(str(link))
    except InvalidPathError:
        return None


def disk_stem(logical_path: str) -> str:
    """The path without ``.md``: the stem shared by the entry's .md, .yml and .emb files."""
    return logical_path[: -len(ENTRY_SUFFIX)]


@functools.lru_cache(maxsize=64)
def _real_root(root: str) -> str:
    return os.path.realpath(root)


def is_within(root: Path | str, candidate: Path | str) -> bool:
    """True if ``candidate`` (after resolving symlinks) lies inside ``root``."""
    return _inside_real(_real_root(os.fspath(root)), os.path.realpath(candidate))


def inside_real_root(root: Path | str, real: str) -> bool:
    """True if the resolved path ``real`` (no links left in it) lies inside ``root``."""
    return _inside_real(_real_root(os.fspath(root)), real)


def _inside_real(real_root: str, real: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _shown(root: Path | str, path: Path | str) -> str:
    """``path`` relative to the root, as messages show it."""
    relative = os.path.relpath(path, root)
    return Path(relative).as_posix() if not relative.startswith("..") else os.fspath(path)


def unsafe_file(root: Path | str, path: Path | str, reason: str, why: str = "") -> UnsafeFileError:
    """The error for a file of the root memdir will not use, worded for ``reason`` (see `UnsafeFileError`)."""
    shown = _shown(root, path)
    if reason == "outside":
        message = f"Cannot use {shown!r}: it resolves outside the memory root (through a symbolic link)."
        hint = "Remove the symbolic link, or replace it with the file itself."
    elif reason == "special":
        message = f"Cannot use {shown!r}: it is {why or 'a special file'}, not a regular file."
        hint = "Only regular files are memory entries (or read and written at all): remove or rename it."
    elif reason == "link":
        message = (
            f"Cannot use {shown!r}: it is a symbolic link, and memdir never follows links among its own files "
            "(.memdir/ holds derived data and journals, threads/ the thread event logs)."
        )
        hint = "Remove the link (or put the real file or folder there in its place)."
    elif reason == "loop":
        message = f"Cannot use {shown!r}: it goes through symbolic links that loop."
        hint = "Remove or fix the looping symbolic link ('ls -l' shows where each one points)."
    else:
        message = f"Cannot use {shown!r}: its full path on disk is longer than the operating system allows{why}."
        hint = "Use a shorter path (fewer or shorter folder and file names), or a memory root with a shorter path."
    return UnsafeFileError(shown, reason, message, hint)


def os_path_error(root: Path | str, path: Path | str, exc: OSError) -> OSError | UnsafeFileError:
    """``exc`` as memdir's clear error when it is about the path itself (ELOOP, ENAMETOOLONG), else ``exc``."""
    if exc.errno == errno.ELOOP:
        return unsafe_file(root, path, "loop")
    if exc.errno == errno.ENAMETOOLONG:
        return unsafe_file(root, path, "too_long")
    return exc


def confine(root: Path | str, path: Path | str) -> str:
    """``path`` with every symbolic link resolved, provided that lies inside ``root``.

    The one check every file memdir opens, creates, renames or deletes goes through (the
    shared open in `memdir.core.files` and the transaction journal both call it): a path
    may pass through symbolic links as long as where it ends up is inside the root.
    A missing file is fine (it may be about to be created); its folders are resolved.

    Raises:
        UnsafeFileError: it leads outside the root, its symbolic links loop, or it is
            too long for the operating system.
    """
    return confined_stat(root, path)[0]


def confined_stat(root: Path | str, path: Path | str) -> tuple[str, os.stat_result | None]:
    """`confine`, plus the file's ``stat`` (None when it does not exist).

    The resolved path holds no symbolic link any more, so this ``lstat`` is the file's own.
    """
    walked = _walked_under_root(os.fspath(root), os.fspath(path))
    if walked is not None:
        return walked
    real = os.path.realpath(path)
    if not _inside_real(_real_root(os.fspath(root)), real):
        raise unsafe_file(root, path, "outside")
    try:
        st = os.lstat(real)
    except (FileNotFoundError, NotADirectoryError):
        return real, None
    except OSError as exc:
        raise os_path_error(root, path, exc) from exc
    if stat.S_ISLNK(st.st_mode):  # realpath stops resolving only where links loop
        raise unsafe_file(root, path, "loop")
    return real, st


def _walked_under_root(root: str, path: str) -> tuple[str, os.stat_result | None] | None:
    """`confined_stat` of a path spelled under ``root`` when no symbolic link lies below the root:
    only the folders below it are looked at (the root's own resolution is cached), where
    ``realpath`` would look at every folder from ``/``. None when a link is met, or for any
    other spelling: the caller resolves the path in full then.
    """
    prefix = root.rstrip(os.sep) + os.sep
    if os.name != "posix" or not path.startswith(prefix) or not os.path.isabs(root):
        return None
    parts = path[len(prefix):].split(os.sep)
    if {"", ".", ".."}.intersection(parts):
        return None
    real = _real_root(root).rstrip(os.sep)
    for depth, part in enumerate(parts):
        real += os.sep + part
        try:
            st = os.lstat(real)
        except (FileNotFoundError, NotADirectoryError):  # nothing below it exists: no link either
            return os.sep.join([real, *parts[depth + 1:]]), None
        except OSError:
            return None  # (the full resolution reports it)
        if stat.S_ISLNK(st.st_mode):
            return None
    return real, st


@functools.lru_cache(maxsize=64)
def _path_max(root: str) -> int:
    try:
        return os.pathconf(root, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):  # no such call on Windows
        return _DEFAULT_PATH_MAX


def resolve_in_root(root: Path, logical_path: str) -> Path:
    """The ``.md`` file for a normalised logical path, refusing symlink escapes.

    Raises:
        InvalidPathError: if the file, or a folder on the way to it, is a symlink
            that leads outside ``root`` (an `UnsafeFileError`, as for symbolic links
            that loop), or if one of the entry's files would have a full path longer
            than the operating system accepts.
    """
    target = Path(root) / logical_path
    folder, name = os.path.split(os.fsencode(target))
    longest = len(folder) + 1 + max(len(name) - len(ENTRY_SUFFIX) + len(".yml"), STAGING_NAME_BYTES)
    limit = _path_max(os.fspath(root))
    if longest >= limit:
        raise unsafe_file(root, target, "too_long", f" ({longest:,} bytes where at most {limit - 1:,} fit)")
    confine(root, target)
    return target
