"""Listing a memory root: which files under it are entries, found with one ``scandir`` walk.

Listing must stay cheap on large roots (the index checks freshness with it), so the
walk decides from names and ``DirEntry`` data alone; the only files it opens are lone
``.md`` files, and only their first bytes (`sniff_stub`). What counts as an entry:
a regular ``.md`` file whose every path component is a valid memory name, reached
without leaving the root (named pipes, sockets, devices, links that loop or lead out
are not entries, and are never opened); hidden items (``.memdir/``, ``.lock``, temporary
files) and the root's reserved folders (``threads/``: thread event logs) are never entries.
"""

from __future__ import annotations

import logging
import os
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memdir.core.errors import UnsafeFileError
from memdir.core.files import read_regular
from memdir.core.paths import RESERVED_FOLDERS, is_within
from memdir.storage import stubs
from memdir.storage.sidecar import SIDECAR_SUFFIX

log = logging.getLogger(__name__)

_BAD_ASCII_NAME = re.compile(r'[<>:"|?*\\\x00-\x1f\x7f]')


_warned_names: set[str] = set()


def _listable_name(name: str, folder: str) -> bool:
    """True if ``name`` can be part of a logical path, i.e. the entry is reachable through the API."""
    if name != name.strip() or name.startswith("."):
        return False
    if name.isascii():
        return _BAD_ASCII_NAME.search(name) is None
    if _BAD_ASCII_NAME.search(name) is not None or any(unicodedata.category(ch) == "Cc" for ch in name):
        return False
    if not unicodedata.is_normalized("NFC", name):
        # Decomposed (NFD) names come from macOS tools and some archives; memdir's paths are
        # NFC, so the file cannot be reached. Say so once rather than losing it silently.
        where = os.path.join(folder, name)
        if where not in _warned_names:
            _warned_names.add(where)
            log.warning(
                "not listing %s: its name is not in Unicode NFC form; rename it to %r to make it an entry",
                where, unicodedata.normalize("NFC", name),
            )
        return False
    return True


@dataclass(frozen=True, slots=True)
class FolderItems:
    """What one folder holds for a listing (`scan_folder`).

    Attributes:
        entries: (logical path, DirEntry, its stat, has .yml) of each listable ``.md`` in it.
        folders: (DirEntry, logical prefix) of each real folder in it.
        linked: (path, logical prefix) of each in-root symbolic link to a folder in it.
    """

    entries: list[tuple[str, os.DirEntry[str], os.stat_result, bool]]
    folders: list[tuple[os.DirEntry[str], str]]
    linked: list[tuple[str, str]]


def scan_folder(root: Path, folder: str, prefix: str) -> FolderItems:
    """The entries and subfolders directly in ``folder`` (logical prefix ``prefix``): one ``scandir``,
    one ``stat`` per ``.md``; names decide the rest."""
    items = _list_folder(folder)
    names = {item.name for item in items}
    found = FolderItems([], [], [])
    for item in items:
        name = item.name
        try:
            is_md = name.endswith(".md") and len(name) > 3
            if not (is_md or item.is_dir()) or not _listable_name(name, folder):
                continue  # sidecars and other files: no further system calls
            if item.is_symlink():
                if not is_within(root, item.path):
                    continue  # leads out of the root
                if item.is_dir():
                    found.linked.append((item.path, f"{prefix}{name}/"))
                    continue
            elif item.is_dir():
                if not prefix and name.lower() in RESERVED_FOLDERS:
                    continue  # thread logs, not entries
                found.folders.append((item, f"{prefix}{name}/"))
                continue
            if is_md and item.is_file():
                found.entries.append((f"{prefix}{name}", item, item.stat(), f"{name[:-3]}{SIDECAR_SUFFIX}" in names))
        except OSError:
            continue  # vanished or unreadable while listing
    return found


def scan_entries(
    root: Path, folder: Path, prefix: str, folders: dict[str, os.stat_result | None] | None = None
) -> Iterator[tuple[str, os.DirEntry[str], os.stat_result, bool]]:
    """(logical path, DirEntry, its stat, has .yml) for every listable ``.md`` under ``folder``.

    Each folder is listed once, under its real name when it has one: folders reached
    through (in-root) symlinks are visited only after every real folder, and only if
    not seen yet — which also ends symlink loops.

    Args:
        root: the memory root (resolved); symlinks leading outside it are skipped.
        folder: where to start, ``root`` or a folder inside it.
        prefix: the logical path of ``folder`` (``""`` for the root, else ending in ``/``).
        folders: if given, receives each listed folder's logical prefix with its stat, taken
            before it is listed, or None for a folder reached through a link
            (`memdir.storage.directory.folder_stamps`).
    """
    try:
        start = folder.stat()
    except OSError:
        return
    seen = {(start.st_dev, start.st_ino)}
    if folders is not None:
        folders[prefix] = start
    real: list[tuple[str, str]] = [(str(folder), prefix)]
    linked: list[tuple[str, str]] = []
    while real or linked:
        if real:
            current, current_prefix = real.pop()
        else:
            current, current_prefix = linked.pop()
            if not _first_visit(current, current_prefix, seen, folders=folders, linked=True):
                continue
        found = scan_folder(root, current, current_prefix)
        yield from found.entries
        for item, sub_prefix in found.folders:
            if _first_visit(item.path, sub_prefix, seen, item, folders):
                real.append((item.path, sub_prefix))
        linked.extend(found.linked)


def _first_visit(
    path: str,
    prefix: str,
    seen: set[tuple[int, int]],
    item: os.DirEntry[str] | None = None,
    folders: dict[str, os.stat_result | None] | None = None,
    *,
    linked: bool = False,
) -> bool:
    """Mark a folder as to be listed (noting its stat in ``folders``); False if it was listed already (under another name)."""
    try:
        st = item.stat() if item is not None else os.stat(path)
    except OSError:
        return False
    key = (st.st_dev, st.st_ino)
    if key in seen:
        return False
    seen.add(key)
    if folders is not None:
        folders[prefix] = None if linked else st
    return True


def _list_folder(folder: str) -> list[os.DirEntry[str]]:
    """Every item of ``folder`` that is not hidden (``.memdir``, ``.lock``, temporary files...)."""
    try:
        with os.scandir(folder) as it:
            return [item for item in it if item.name[0] != "."]
    except FileNotFoundError:  # removed since its parent was listed (a delete pruning empty folders)
        return []
    except OSError as exc:
        log.warning("Skipping unreadable folder %s: %s", folder, exc)
        return []


def sniff_stub(root: Path, file: str) -> bool:
    """True if a listed ``.md`` starts like a stub; only its first bytes are read (False if unreadable)."""
    try:
        return stubs.looks_like_stub(read_regular(root, file, stubs.SNIFF_BYTES))
    except (OSError, UnsafeFileError):
        return False
