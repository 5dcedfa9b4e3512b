"""A snapshot of the listing rows next to the SQLite index, so a fresh process lists a large root fast.

A process's first listing needs every entry's listing row (`memdir.storage.directory.listing_rows`):
read out of SQLite, 100K rows cost ~0.2 s of CPU before a single row is built; the same rows
read from one flat file cost ~0.05 s. Like the vector snapshot (`memdir.storage.directory.snapshot`) it
is a cache of a cache: the SQLite index stays the shared truth, and the snapshot only says
"these were the listing rows at change number ``seq`` of index ``generation``". Its reader
applies every row changed and removed since ``seq`` (`memdir.storage.directory.listing_rows.changes_since`),
so a listing from it is exactly what one from SQLite alone would be (roots of fewer than
`memdir.storage.directory.snapshot.MIN_ROWS` entries get none); a snapshot of another
generation, from a ``seq`` the index has not reached or whose tombstones were pruned, or an
unreadable one, is ignored.

Written (to a temporary file renamed into place, so readers see the old file or the new one)
by `memdir.storage.directory.index.DerivedIndex.listing` after it read every row of a large root from
SQLite, and after it had to apply many changes to an old snapshot; several processes may write
it, the last one wins, and each version is complete and valid for its own ``seq``.

File format (read without running anything the file says: no pickle, no marshal): the magic
``MDLS``, the header's length (uint32) and the header (UTF-8 JSON: format, generation, seq,
rows, the byte length of each text column, and the folders: the rows come folder by folder,
and a list of (folder, row count) says where each folder's run starts), then the number columns (int64 x rows each:
size, hits, ``.md`` mtime, updated_at in microseconds since the epoch) and the text columns
(UTF-8, rows separated by NUL: path, title, updated_at as written, type — an empty
updated_at or type stands for none). A file whose sizes or row counts do not add up is ignored;
rows whose text holds a NUL, or a number beyond int64, are never written (no snapshot then).
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path

import numpy as np

from memdir.core.errors import UnsafeFileError
from memdir.core.files import open_regular, replacing
from memdir.storage.directory.snapshot import check_size, header_bytes, read_header

log = logging.getLogger(__name__)

SNAPSHOT_FILE = "listing.snapshot"
FORMAT = 1
MAGIC = b"MDLS"
NUMBERS = ("sizes", "hits", "mtimes", "moments")
TEXTS = ("paths", "titles", "updated", "types")
_SEPARATOR = "\0"

Columns = dict[str, list]  # NUMBERS and TEXTS -> one list per column, all of one length
Runs = list[tuple[str, int]]  # (folder prefix, how many rows in a row are directly in it)


def snapshot_path(index_file: Path) -> Path:
    return index_file.parent / SNAPSHOT_FILE


def read_listing_snapshot(path: Path) -> tuple[str, int, Columns, Runs] | None:
    """(generation, seq, columns, folder runs) of the snapshot at ``path``; None when there is none
    or it cannot be used (a warning says why)."""
    try:
        with open_regular(path.parent, path) as file:  # a regular file of the index's own folder, or nothing
            header, start = read_header(file, MAGIC)
            if header.get("format") != FORMAT:
                return None
            rows, lengths = int(header["rows"]), [int(header["bytes"][name]) for name in TEXTS]
            runs: Runs = [(str(folder), int(count)) for folder, count in header["folders"]]
            if sum(count for _, count in runs) != rows or any(count <= 0 for _, count in runs):
                raise ValueError("the folders' row counts do not add up to the rows")
            check_size(file, start + 8 * rows * len(NUMBERS) + sum(lengths))
            numbers = np.fromfile(file, dtype="<i8", count=rows * len(NUMBERS)).reshape(len(NUMBERS), rows)
            columns: Columns = {name: numbers[at].tolist() for at, name in enumerate(NUMBERS)}
            for name, length in zip(TEXTS, lengths):
                columns[name] = file.read(length).decode("utf-8").split(_SEPARATOR) if rows else []
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, struct.error, UnsafeFileError) as exc:  # (JSON, UTF-8: ValueErrors)
        log.warning("ignoring the listing snapshot %s: %s", path, exc)
        return None
    if any(len(columns[name]) != rows for name in TEXTS):
        log.warning("ignoring the listing snapshot %s: a text column does not hold %d rows", path, rows)
        return None
    for name in ("updated", "types"):
        columns[name] = [text or None for text in columns[name]]
    return str(header.get("generation", "")), int(header.get("seq", -1)), columns, runs


def write_listing_snapshot(path: Path, generation: str, seq: int, columns: Columns, runs: Runs) -> None:
    """Write the rows — folder by folder, as ``runs`` say (`memdir.storage.directory.listing_rows.by_folder`) —
    to ``path`` atomically (temporary file, then rename); failures are only logged."""
    rows = len(columns["paths"])
    try:
        numbers = np.asarray([columns[name] for name in NUMBERS], dtype="<i8").reshape(len(NUMBERS), rows)
    except OverflowError:
        return  # a count of hits beyond int64 (a hand-written .yml): no snapshot
    texts = []
    for name in TEXTS:
        text = _SEPARATOR.join([value or "" for value in columns[name]])
        if text.count(_SEPARATOR) != max(0, rows - 1):
            return  # a title with a NUL in it: no snapshot (the rows come from SQLite)
        texts.append(text.encode("utf-8"))
    header = header_bytes(MAGIC, {
        "format": FORMAT, "generation": generation, "seq": seq, "rows": rows,
        "bytes": {name: len(text) for name, text in zip(TEXTS, texts)}, "folders": runs,
    })  # fmt: skip
    try:
        with replacing(path, durable=False) as file:  # derived: a lost snapshot means one read from SQLite
            file.write(header)
            numbers.tofile(file)
            for encoded in texts:
                file.write(encoded)
    except OSError as exc:
        log.warning("could not write the listing snapshot %s: %s", path, exc)


__all__ = ["read_listing_snapshot", "snapshot_path", "write_listing_snapshot"]
