"""The model's word-embedding table, held only for the words a process has met.

The table has a row for every word piece of the vocabulary (30,522 x 384 floats, 47 MB for
MiniLM), but the texts a process embeds use a few thousand of them. The graph memdir builds
takes the table as an input (`onnx_graph.words_apart`), so `WordTable` hands it a table whose
rows are read from the file beside the graph the first time a text uses them, in the order
they are first met, with the token ids renumbered to match: a row costs memory once its word
is met, and only its own 1.5 KB. The model reads the same rows as from the whole table, so
its vectors are the same, bit for bit.

The table lives in a private anonymous mapping of the whole table's size, whose pages the
system gives the process only when a row on them is written. Transparent huge pages are refused for
it: one row written would otherwise hold 2 MB.
"""

from __future__ import annotations

import mmap
import os
import threading
import weakref
from pathlib import Path

import numpy as np

__all__ = ["WordTable"]

_FLOAT = np.dtype("<f4")


class WordTable:
    """The rows of a word-embedding table that the texts embedded so far used.

    Thread-safe: rows are added under a lock and never change once added. The file stays open
    while the table lives, so a cache cleared under a running process takes no row from it.

    Args:
        path: the whole table, raw little-endian float32 rows, no header.
        rows: the vocabulary's size (the file must hold exactly this many rows).
        width: the floats of a row (the model's hidden size).

    Raises:
        ValueError: the file does not hold ``rows`` x ``width`` floats.
    """

    def __init__(self, path: Path, rows: int, width: int) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 - open as long as the table lives, closed with it
        weakref.finalize(self, self._file.close)
        size = os.fstat(self._file.fileno()).st_size
        if size != rows * width * _FLOAT.itemsize:
            raise ValueError(f"{path}: {size} bytes, not a table of {rows} x {width} floats")
        self.path = path
        self._row_bytes = width * _FLOAT.itemsize
        private = {"flags": mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS} if hasattr(mmap, "MAP_ANONYMOUS") else {}
        self._mapping = mmap.mmap(-1, size, **private)  # (Python maps shared memory unless told otherwise)
        if hasattr(mmap, "MADV_NOHUGEPAGE"):  # (Linux)
            self._mapping.madvise(mmap.MADV_NOHUGEPAGE)
        self.matrix = np.frombuffer(self._mapping, dtype=_FLOAT).reshape(rows, width)
        """The table the model is given: the rows met so far, in the order they were met."""
        self._slot = np.full(rows, -1, dtype=np.int64)  # each token id's row in `matrix`, -1 before it is met
        self._used = 0
        self._lock = threading.Lock()

    @property
    def rows_held(self) -> int:
        """How many of the vocabulary's rows have been read so far."""
        return self._used

    def renumber(self, ids: np.ndarray) -> np.ndarray:
        """``ids`` (token ids, any shape) as rows of `matrix`, reading the rows not met before."""
        slots = self._slot[ids]
        if (slots < 0).any():
            with self._lock:
                self._read(np.unique(ids[self._slot[ids] < 0]))
            slots = self._slot[ids]
        return slots

    def _read(self, ids: np.ndarray) -> None:
        """Copy the rows of ``ids`` (new, sorted) from the file to the next free rows of `matrix`."""
        if not len(ids):  # (another thread read them first)
            return
        first = self._used
        for at, token in enumerate(ids.tolist(), start=first):
            self._file.seek(token * self._row_bytes)
            if self._file.readinto(memoryview(self.matrix[at]).cast("B")) != self._row_bytes:
                raise ValueError(f"{self.path}: the table ended before row {token}")
        self._slot[ids] = np.arange(first, first + len(ids))  # published once the rows are written
        self._used = first + len(ids)
