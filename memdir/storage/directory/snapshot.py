"""A snapshot of the vector matrix next to the SQLite index, so a large root opens fast.

Reading 100K vectors out of SQLite costs 0.4-0.7 s at open (154 MB of blobs copied row
by row); the same matrix read from one flat file costs ~0.1 s. The snapshot is a cache
of a cache: the SQLite index stays the shared truth, and the snapshot only says "these
were the vectors of these row ids at change number ``seq`` of index ``generation``".

Opening with a snapshot (`DerivedIndex._load_vectors`):

* a snapshot of another generation (the index was cleared or rebuilt), of another
  dimension, or unreadable is ignored: the vectors come from SQLite;
* otherwise its rows are used, minus every entry changed since ``seq`` (their vectors,
  if they still have one, are read from SQLite) and minus entries that no longer exist,
  so the result is exactly what a full load would give.

Written (by `write_snapshot`, to a temporary file renamed into place, so readers see
the old file or the new one) after a full load of a large root, and after a load that
had to read many changed rows; several processes may write it, the last one wins, and
each version is complete and valid for its own ``seq``.

File format (little-endian; read with one copy per array, ``np.fromfile``): the magic
``MDVS``, the header's length (uint32) and the header (UTF-8 JSON: format, generation,
seq, rows, dim, model names), then ``ids`` (int64 x rows), the model codes (int32 x rows,
indexes into the header's names) and the matrix (float32 x rows x dim). A file whose
size does not add up is ignored.
"""

from __future__ import annotations

import json
import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from memdir.core.errors import UnsafeFileError
from memdir.core.files import open_regular, replacing

log = logging.getLogger(__name__)

SNAPSHOT_FILE = "vectors.snapshot"
FORMAT = 1
MAGIC = b"MDVS"
MIN_ROWS = 5_000
"""Roots with fewer rows load fast enough from SQLite and get no snapshot (vectors, listing rows)."""
STALE_AFTER = 1_000
"""A snapshot is written anew once a load had to read more rows changed since it than this (or a tenth of them)."""


def is_stale(changed: int, rows: int) -> bool:
    """True if a snapshot of ``rows`` rows, ``changed`` of them changed since, is worth writing anew:
    a few thousand rows read from SQLite cost a few ms, writing a snapshot ~0.05-0.1 s."""
    return changed > max(STALE_AFTER, rows // 10)


@dataclass(frozen=True)
class VectorSnapshot:
    """Vectors of index rows as of change ``seq`` of index ``generation``.

    Attributes:
        ids: the rows' ``entries.id``, ascending.
        models: per row, the model that made its vector.
        matrix: ``(len(ids), dim)`` float32, unit rows.
    """

    generation: str
    seq: int
    ids: np.ndarray
    models: list[str | None]
    matrix: np.ndarray


def snapshot_path(index_file: Path) -> Path:
    return index_file.parent / SNAPSHOT_FILE


def read_header(file: BinaryIO, magic: bytes) -> tuple[dict[str, Any], int]:
    """The JSON header of a snapshot file that starts with ``magic``, and its end (where the data
    starts); ValueError (or struct.error) if the file is not such a snapshot."""
    if file.read(4) != magic:
        raise ValueError(f"not a memdir snapshot ({magic.decode()})")
    (size,) = struct.unpack("<I", file.read(4))
    return json.loads(file.read(size).decode("utf-8")), 8 + size


def check_size(file: BinaryIO, expected: int) -> None:
    """ValueError unless the file holds exactly ``expected`` bytes (the size its header promises)."""
    actual = os.fstat(file.fileno()).st_size
    if actual != expected:
        raise ValueError(f"{actual} bytes where the header promises {expected}")


def header_bytes(magic: bytes, header: dict[str, Any]) -> bytes:
    """``magic``, the header's length and the header (UTF-8 JSON): what `read_header` reads."""
    text = json.dumps(header).encode("utf-8")
    return magic + struct.pack("<I", len(text)) + text


def read_snapshot(path: Path) -> VectorSnapshot | None:
    """The snapshot at ``path``; None when there is none or it cannot be used (a warning says why)."""
    try:
        with open_regular(path.parent, path) as file:  # a regular file of the index's own folder, or nothing
            header, start = read_header(file, MAGIC)
            if header.get("format") != FORMAT:
                return None
            rows, dim, names = int(header["rows"]), int(header["dim"]), list(header["models"])
            check_size(file, start + rows * (8 + 4 + 4 * dim))
            ids = np.fromfile(file, dtype="<i8", count=rows)
            codes = np.fromfile(file, dtype="<i4", count=rows)
            matrix = np.fromfile(file, dtype="<f4", count=rows * dim).reshape(rows, dim)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, struct.error, UnsafeFileError) as exc:  # JSONDecodeError: a ValueError
        log.warning("ignoring the vector snapshot %s: %s", path, exc)
        return None
    if rows and (codes.min() < 0 or codes.max() >= len(names)):
        log.warning("ignoring the vector snapshot %s: a model code is out of range", path)
        return None
    return VectorSnapshot(str(header.get("generation", "")), int(header.get("seq", -1)), ids, [names[c] for c in codes.tolist()], matrix)


def write_snapshot(path: Path, snapshot: VectorSnapshot) -> None:
    """Write ``snapshot`` to ``path`` atomically (temporary file, then rename); failures are only logged."""
    names = list(dict.fromkeys(snapshot.models))
    code_of = {name: code for code, name in enumerate(names)}
    rows, dim = snapshot.matrix.shape
    header = header_bytes(MAGIC, {
        "format": FORMAT, "generation": snapshot.generation, "seq": snapshot.seq, "rows": rows, "dim": dim, "models": names,
    })  # fmt: skip
    try:
        with replacing(path, durable=False) as file:  # derived: a lost snapshot means one full load
            file.write(header)
            np.asarray(snapshot.ids, dtype="<i8").tofile(file)
            np.fromiter(map(code_of.__getitem__, snapshot.models), dtype="<i4", count=rows).tofile(file)
            np.ascontiguousarray(snapshot.matrix, dtype="<f4").tofile(file)
    except OSError as exc:
        log.warning("could not write the vector snapshot %s: %s", path, exc)


__all__ = ["MIN_ROWS", "STALE_AFTER", "VectorSnapshot", "is_stale", "read_snapshot", "snapshot_path", "write_snapshot"]
