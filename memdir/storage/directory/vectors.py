"""The in-memory vector matrix: every embedded entry's vector in one contiguous float32 array.

SwarmMemory read every ``.emb`` file on every search. memdir keeps the vectors of a
root in one ``(rows, dim)`` array instead, so a semantic search is one dot product per
row and a top-k cut (`VectorMatrix.ranked`), and filters are boolean masks over parallel
arrays, applied *before* the top-k cut. A large matrix is searched in two steps: a first
pass over its rows' projections on a few principal directions picks the rows that may be
among the best, and only their full rows are compared (`memdir.storage.directory.projection`);
every cosine a search reports is still the exact one.

Rows are kept dense: removing a row moves the last row into the hole, so the used
part of the array never has gaps. Capacity doubles when full, so appends are
amortised O(dim). The matrix is derived data: `memdir.storage.directory.index.DerivedIndex`
fills it from SQLite at open and keeps it in step on every change, in this process
and (through ``refresh``) those of other processes.

Not thread-safe by itself; the index serialises access.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from memdir.storage.directory import projection
from memdir.storage.directory.projection import Projection
from memdir.storage.directory.top_k import top_of
from memdir.storage.records import folder_of

_MIN_CAPACITY = 256

PARALLEL_MIN_ROWS = 50_000
"""From this many rows a cosine scan is split over the CPUs. A smaller scan takes about a millisecond, less than
a helper thread may take to wake on a busy machine: measured on 2 shared cores, splitting helped at 100K rows
whatever the load, but at 10K only when a core was idle, and cost several times the scan when none was."""

SCAN_CHUNKS = 4
"""A split scan's parts, claimed by whichever thread is free: a helper that wakes late leaves its share
to the caller."""

_NO_ROWS = np.zeros(0, dtype=np.int64)


@functools.cache
def _scan_pool() -> ThreadPoolExecutor | None:
    """Helper threads for the cosine scan: one per usable CPU beyond the caller's (None on one CPU)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    helpers = min(cpus, 4) - 1
    return ThreadPoolExecutor(helpers, thread_name_prefix="memdir-scan") if helpers > 0 else None




class _Codes:
    """Small integer codes for repeated strings (types, folders, model ids), so masks are numpy comparisons."""

    def __init__(self) -> None:
        self.ids: dict[str | None, int] = {}
        self.names: list[str | None] = []

    def code(self, name: str | None) -> int:
        found = self.ids.get(name)
        if found is None:
            found = self.ids[name] = len(self.names)
            self.names.append(name)
        return found

    def encode(self, values: Sequence[str | None]) -> np.ndarray:
        """Codes of many values at once (C-level ``map`` over a dict, no Python call per value)."""
        for value in dict.fromkeys(values):
            self.code(value)
        return np.fromiter(map(self.ids.__getitem__, values), dtype=np.int32, count=len(values))

    def find(self, name: str | None) -> int:
        """The code of ``name``, or -1 if no row ever had it."""
        return self.ids.get(name, -1)


_NO_TAGS: frozenset[str] = frozenset()


def _as_tag_set(value: str | Iterable[str] | None) -> frozenset[str]:
    """Lowercased tags from a list or a newline-joined string (the index's storage form)."""
    if not value:
        return _NO_TAGS
    items = value.split("\n") if isinstance(value, str) else value
    return frozenset(tag.casefold() for tag in items if tag)


class VectorMatrix:
    """Vectors of one dimension, addressed by logical path, with per-row type/folder/tags/model.

    Args:
        dim: vector length; None until the first vector arrives.
    """

    def __init__(self, dim: int | None = None) -> None:
        self._reset(dim)

    def _reset(self, dim: int | None) -> None:
        self.dim = dim
        self._n = 0
        self._data = np.zeros((0, dim or 0), dtype=np.float32)
        self._paths: list[str] = []
        self._rows: dict[str, int] = {}
        self._types = _Codes()
        self._folders = _Codes()
        self._models = _Codes()
        self._type_code = np.zeros(0, dtype=np.int32)
        self._folder_code = np.zeros(0, dtype=np.int32)
        self._model_code = np.zeros(0, dtype=np.int32)
        self._model_rows: dict[int, int] = {}  # model code -> rows of that model (see `has_model`)
        self._key = np.zeros(0, dtype=np.int64)  # per row: its entry's key (see `keys_at`)
        self._key_row = np.zeros(0, dtype=np.int64)  # per key: its row, -1 for none
        self._row_tags: list[str | Iterable[str] | None] = []  # raw until the tag index is built
        self._tag_rows: dict[str, set[int]] | None = {}
        self._projection: Projection | None = None  # fitted when a search first needs it (`ranked`)

    # ------------------------------------------------------------------ size & lookup
    def __len__(self) -> int:
        return self._n

    def __contains__(self, path: object) -> bool:
        return path in self._rows

    @property
    def paths(self) -> Sequence[str]:
        """Path of each row, in row order (do not modify)."""
        return self._paths

    @property
    def data(self) -> np.ndarray:
        """The used rows as a view ``(len, dim)`` (valid until the next change)."""
        return self._data[: self._n]

    def row_of(self, path: str) -> int | None:
        return self._rows.get(path)

    def keys_at(self, rows: np.ndarray) -> np.ndarray:
        """The key of each of ``rows``' entries (-1: none): the number the index gives an entry beside
        its row here (its slot in the keyword index), so a search meets both sides without a path."""
        return self._key[rows]

    def rows_of_keys(self, keys: np.ndarray) -> np.ndarray:
        """The row of each of ``keys`` (-1 for a key no row has)."""
        keys = np.asarray(keys, dtype=np.int64)
        rows = np.empty(len(keys), dtype=np.int64)
        rows.fill(-1)
        inside = (keys >= 0) & (keys < len(self._key_row))
        rows[inside] = self._key_row[keys[inside]]
        return rows

    def renumber_keys(self, new_key: np.ndarray) -> None:
        """Keys changed all at once: ``new_key[old]`` is each old key's new one (-1: gone)."""
        keys = self._key[: self._n]
        known = keys >= 0
        keys[known] = new_key[keys[known]]
        self._index_keys()

    def _index_keys(self) -> None:
        """Rebuild the key -> row lookup from the rows' keys."""
        keys = self._key[: self._n]
        known = np.flatnonzero(keys >= 0)
        self._key_row = np.full(int(keys.max(initial=-1)) + 1, -1, dtype=np.int64)
        self._key_row[keys[known]] = known

    def _point(self, key: int, row: int) -> None:
        """Record that ``key`` is at ``row`` (-1: at none)."""
        if key < 0:
            return
        if key >= len(self._key_row):
            if row < 0:
                return
            grown = np.full(max(_MIN_CAPACITY, 2 * len(self._key_row), key + 1), -1, dtype=np.int64)
            grown[: len(self._key_row)] = self._key_row
            self._key_row = grown
        self._key_row[key] = row

    def vector(self, path: str) -> np.ndarray | None:
        row = self._rows.get(path)
        return None if row is None else self._data[row].copy()

    def has_model(self, model: str | None) -> bool:
        """True if some row was embedded by ``model``."""
        return self._model_rows.get(self._models.find(model), 0) > 0

    def model_of(self, path: str) -> str | None:
        row = self._rows.get(path)
        return None if row is None else self._models.names[int(self._model_code[row])]

    def snapshot(self) -> tuple[list[str], np.ndarray]:
        """(paths, copy of the matrix) — a stable view for callers that work outside the index lock."""
        return list(self._paths), self._data[: self._n].copy()

    # ------------------------------------------------------------------ changes
    def clear(self, dim: int | None = None) -> None:
        """Drop every row (and optionally switch dimension)."""
        self._reset(dim if dim is not None else self.dim)

    def _grow(self, needed: int) -> None:
        capacity = len(self._data)
        if needed <= capacity:
            return
        new_capacity = max(_MIN_CAPACITY, capacity * 2, needed)
        data = np.zeros((new_capacity, self.dim or 0), dtype=np.float32)
        data[: self._n] = self._data[: self._n]
        self._data = data
        for name in ("_type_code", "_folder_code", "_model_code", "_key"):
            old = getattr(self, name)
            grown = np.zeros(new_capacity, dtype=old.dtype)
            grown[: self._n] = old[: self._n]
            setattr(self, name, grown)
        if self._projection is not None:
            self._projection.grow(new_capacity, self._n)

    def upsert(
        self,
        path: str,
        vector: np.ndarray,
        *,
        type: str | None = None,
        tags: Iterable[str] = (),
        model: str | None = None,
        key: int = -1,
    ) -> None:
        """Insert or replace the row of ``path``; ``key``: its entry's key (`keys_at`), -1 for none.

        A vector of another dimension than the matrix's means the model changed: the
        newest write wins, so the matrix is cleared and switches to the new dimension
        (the dropped rows were from the old model and need re-embedding anyway).
        """
        vector = np.asarray(vector, dtype=np.float32).ravel()
        norm = float(np.linalg.norm(vector))
        if norm > 0 and abs(norm - 1.0) > 1e-3:  # keep rows unit length: cosine is a dot product
            vector = vector / norm
        if self.dim != vector.shape[0]:
            if self._n:
                self.clear(vector.shape[0])
            else:
                self.dim = vector.shape[0]
                self._data = np.zeros((0, self.dim), dtype=np.float32)
        row = self._rows.get(path)
        if row is not None:
            self._model_rows[int(self._model_code[row])] -= 1
            self._point(int(self._key[row]), -1)
        else:
            self._grow(self._n + 1)
            row = self._n
            self._n += 1
            self._rows[path] = row
            self._paths.append(path)
            self._row_tags.append(_NO_TAGS)
        self._key[row] = key
        self._point(key, row)
        self._data[row] = vector
        if self._projection is not None:
            self._projection.set(row, self._data[row])
        self._type_code[row] = self._types.code(type)
        self._folder_code[row] = self._folders.code(folder_of(path))
        self._model_code[row] = code = self._models.code(model)
        self._model_rows[code] = self._model_rows.get(code, 0) + 1
        self._set_tags(row, list(tags))

    def load(
        self,
        paths: Sequence[str],
        matrix: np.ndarray,
        types: Sequence[str | None],
        tags: Sequence[str | Iterable[str] | None],
        models: Sequence[str | None],
        keys: np.ndarray | None = None,
    ) -> None:
        """Replace everything with ``len(paths)`` rows at once (the fast path at open); ``keys``:
        their entries' keys (`keys_at`; default: none).

        ``matrix`` (unit rows) is adopted, not copied. ``tags`` per row may be a list or
        the index's newline-joined string; the tag index is built on first use. No Python
        call per row beyond C-level ``map``/comprehensions: 100K rows in ~0.1 s.
        """
        n = len(paths)
        self._reset(matrix.shape[1] if n else self.dim)
        if not n:
            return
        self._data = np.ascontiguousarray(matrix, dtype=np.float32)
        self._n = n
        self._paths = list(paths)
        self._rows = dict(zip(self._paths, range(n)))
        self._type_code = self._types.encode(types)
        self._folder_code = self._folders.encode([p[: p.rfind("/")] if "/" in p else "" for p in self._paths])
        self._model_code = self._models.encode(models)
        self._model_rows = dict(enumerate(np.bincount(self._model_code).tolist()))
        self._key = np.full(n, -1, dtype=np.int64) if keys is None else np.array(keys, dtype=np.int64).reshape(n)
        self._index_keys()
        self._row_tags = list(tags)
        self._tag_rows = None

    def remove(self, path: str) -> bool:
        """Drop the row of ``path`` (the last row moves into its place); False if absent."""
        row = self._rows.pop(path, None)
        if row is None:
            return False
        self._set_tags(row, _NO_TAGS)
        self._model_rows[int(self._model_code[row])] -= 1
        self._point(int(self._key[row]), -1)
        last = self._n - 1
        if self._projection is not None:
            self._projection.move(last, row)
        if row != last:
            moved = self._paths[last]
            self._data[row] = self._data[last]
            self._type_code[row] = self._type_code[last]
            self._folder_code[row] = self._folder_code[last]
            self._model_code[row] = self._model_code[last]
            self._key[row] = moved_key = self._key[last]
            self._point(int(moved_key), row)
            moved_tags = self._row_tags[last]
            self._set_tags(last, _NO_TAGS)
            self._set_tags(row, moved_tags)
            self._paths[row] = moved
            self._rows[moved] = row
        self._paths.pop()
        self._row_tags.pop()
        self._n = last
        return True

    def _set_tags(self, row: int, tags: str | Iterable[str] | None) -> None:
        """Give ``row`` these tags, keeping the tag -> rows index in step once it has been built."""
        if self._tag_rows is None:  # not built yet: keep the raw value, parse on first tag filter
            self._row_tags[row] = tags
            return
        old = _as_tag_set(self._row_tags[row])
        new = _as_tag_set(tags)
        for tag in old - new:
            rows = self._tag_rows.get(tag)
            if rows is not None:
                rows.discard(row)
                if not rows:
                    del self._tag_rows[tag]
        for tag in new - old:
            self._tag_rows.setdefault(tag, set()).add(row)
        self._row_tags[row] = new

    def _tag_index(self) -> dict[str, set[int]]:
        """tag -> rows, built from the raw per-row tags the first time a tag filter runs."""
        if self._tag_rows is None:
            index: dict[str, set[int]] = {}
            for row, raw in enumerate(self._row_tags):
                tags = _as_tag_set(raw)
                self._row_tags[row] = tags
                for tag in tags:
                    index.setdefault(tag, set()).add(row)
            self._tag_rows = index
        return self._tag_rows

    # ------------------------------------------------------------------ search
    def mask(
        self,
        *,
        types: Iterable[str] | None = None,
        path_prefix: str | None = None,
        tags: Iterable[str] | None = None,
        model: str | None = None,
    ) -> np.ndarray | None:
        """Boolean mask of rows passing every given filter; None when no filter is given.

        Args:
            types: keep rows whose type is one of these.
            path_prefix: a folder (``concept/ruby`` keeps ``concept/ruby/…`` at any depth)
                or one exact entry path ending in ``.md``.
            tags: keep rows carrying at least one of these tags (case-insensitive).
            model: keep rows embedded by this model id.
        """
        n = self._n
        keep: np.ndarray | None = None

        def narrow(part: np.ndarray) -> None:
            nonlocal keep
            keep = part if keep is None else keep & part

        if types is not None:
            codes = [self._types.find(t) for t in types]
            narrow(np.isin(self._type_code[:n], [c for c in codes if c >= 0]))
        if path_prefix:
            narrow(self._prefix_mask(path_prefix))
        if tags is not None:
            part = np.zeros(n, dtype=bool)
            for tag in tags:
                rows = self._tag_index().get(tag.casefold())
                if rows:
                    part[np.fromiter(rows, dtype=np.int64, count=len(rows))] = True
            narrow(part)
        if model is not None and self._model_rows.get(code := self._models.find(model), 0) < n:
            narrow(self._model_code[:n] == code)  # (not when every row is of that model, the usual case)
        if keep is not None and keep.all():
            return None  # e.g. every row is of the query's model: the unmasked path is faster
        return keep

    def _prefix_mask(self, path_prefix: str) -> np.ndarray:
        n = self._n
        if path_prefix.endswith(".md"):
            part = np.zeros(n, dtype=bool)
            row = self._rows.get(path_prefix)
            if row is not None:
                part[row] = True
            return part
        folder = path_prefix.strip("/")
        inside = folder + "/"
        codes = [code for code, name in enumerate(self._folders.names) if name is not None and (name == folder or name.startswith(inside))]
        return np.isin(self._folder_code[:n], codes)

    def ranked(self, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> Ranked:
        """The ``k`` best rows for ``query`` among those ``mask`` keeps, best first, and the exact cosine of
        any row (rows and query are unit vectors: a cosine is a dot product).

        From `projection.MIN_ROWS` rows a first pass over the rows' projections (`Projection.pool`) picks
        the rows that may be among the best, and only their full rows are compared; otherwise (or when
        that pool would be too large) every full row is (`scan`).
        """
        q = np.asarray(query, dtype=np.float32).ravel()
        if self.dim is None or q.shape[0] != self.dim or not self._n:  # nothing comparable: another model's dimension
            return Ranked(_NO_ROWS, q, self._data[:0], np.zeros(0, dtype=np.float32))
        data = self._data[: self._n]
        first = self._first_pass()
        pool = None if first is None else first.pool(q, self._n, k, mask)
        if pool is None:
            scores, rows = self.scan(q, k, mask)
            return Ranked(rows, q, data, scores)
        return Ranked(pool[top_of(np.vecdot(data[pool], q), k)], q, data, None)

    def _first_pass(self) -> Projection | None:
        """The rows' projection, fitted (again) when due; None where it would not pay (`projection.pays`)."""
        if not projection.pays(self._n, self.dim or 0):
            self._projection = None
            return None
        if self._projection is None or self._projection.due(self._n):
            self._projection = Projection(self._data[: self._n], len(self._data))
        return self._projection

    def scan(self, q: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(cosine of every row with the unit ``q``, the ``k`` best rows among those ``mask`` keeps, best first):
        one dot product per full row.

        ``np.vecdot`` rather than ``@`` or ``einsum``: one short dot product per row on the calling
        thread, faster on this workload than either (OpenBLAS's sgemv wakes threads of its own, which
        answer late on a busy machine; einsum's loop is slower per row). The product is bound by
        memory bandwidth at 100K rows (154 MB), which one core does not saturate: from
        `PARALLEL_MIN_ROWS` rows the rows are split into `SCAN_CHUNKS` parts that the helper threads and
        the caller claim in turn (vecdot releases the GIL), and each part picks its own ``k`` best as
        well, of which the best ``k`` are kept.
        """
        data = self._data[: self._n]
        pool = _scan_pool() if self._n >= PARALLEL_MIN_ROWS else None
        if pool is None:
            out = np.vecdot(data, q)
            return out, top_of(out, k, mask)
        out = np.empty(self._n, dtype=np.float32)
        bounds = [self._n * chunk // SCAN_CHUNKS for chunk in range(SCAN_CHUNKS + 1)]
        best: list[np.ndarray] = [_NO_ROWS] * SCAN_CHUNKS
        claim, done = itertools.count(), threading.Semaphore(0)

        def scan() -> None:  # claims chunks until none is left: a thread that wakes late finds less to do
            while (chunk := next(claim)) < SCAN_CHUNKS:
                lo, hi = bounds[chunk], bounds[chunk + 1]
                try:
                    np.vecdot(data[lo:hi], q, out=out[lo:hi])
                    best[chunk] = lo + top_of(out[lo:hi], k, None if mask is None else mask[lo:hi])
                finally:
                    done.release()

        for _ in range(pool._max_workers):
            pool.submit(scan)
        scan()
        for _ in range(SCAN_CHUNKS):
            done.acquire()
        found = np.concatenate(best)
        return out, found[top_of(out[found], k)]


@dataclasses.dataclass(frozen=True, slots=True)
class Ranked:
    """One search of the matrix: its best rows, best first, and the exact cosine of any row.

    Attributes:
        rows: the best rows, best first.
        query: the unit query vector.
        data: the matrix's rows as of the search (valid while the index's lock is held).
        scores: every row's cosine when every full row was compared, else None (computed when asked).
    """

    rows: np.ndarray
    query: np.ndarray
    data: np.ndarray
    scores: np.ndarray | None

    def cosines(self, rows: np.ndarray) -> np.ndarray:
        """The exact cosine of each of ``rows`` with the query."""
        if self.scores is not None:
            return self.scores[rows]
        return np.vecdot(self.data[rows], self.query)
