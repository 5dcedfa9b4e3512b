"""A cheap first pass for the vector matrix's search: every row projected onto a few principal directions.

Embeddings of real text are far from isotropic: most of a store's variance lies in a few dozen of the
model's 384 directions. `Projection` keeps, beside the matrix's float32 rows, each row's coordinates on
the top `DIMENSIONS` eigenvectors of the rows' second-moment matrix (a third of the bytes) and the length
of what the projection leaves out (its residual). A search scans the short rows, keeps every row that
could still be among the ``k`` best, and lets the matrix compute those rows' exact cosines from the full
rows: what a search reports or fuses is never an estimate.

Which rows "could still be among the best": a row's cosine is its projected part's plus its residual's,
and the residual part is unknown but small; modelled as noise spread evenly over the directions the
basis leaves out, its spread is ``|r_row| |r_query| / sqrt(dim - DIMENSIONS)``. A row is kept when its
estimate plus `MARGIN` spreads reaches the ``k``-th best estimate minus `MARGIN` spreads. So the pool
is small where the projection is faithful (a store of one subject) and grows where the best rows are
nearly tied (a store of many subjects): a worse basis costs time, not recall. When the pool would be a
large share of the rows (`MAX_POOL_SHARE`), or the basis holds too little of the rows' energy
(`MIN_ENERGY`: vectors without structure, such as random ones), the matrix scans the full rows instead.

The basis is fitted from an even sample of the rows (`FIT_SAMPLE`) when a search first needs it, and fitted
again once as many rows have changed as there were when it was fitted; rows added or rewritten between fits
are projected with the current basis. The matrix keeps this object in step with its rows (same row order,
holes filled by the last row) under its index's lock, and replaces it whole when refitting: a search sees
one basis and the rows projected with it.
"""

from __future__ import annotations

import math

import numpy as np

from memdir.storage.directory.top_k import at_least_kth

MIN_ROWS = 20_000
"""Below this many rows a search scans the full rows (a new store's searches stay exactly as they were). At 10K
rows the first pass saves ~0.2-0.3 ms of a ~1.7 ms search, while projecting every row costs its rows (a third of
the matrix) and the BLAS buffers that stay in the process (~15-20 MB): not worth it for a store of
that size, whose whole search is then bound by the work after the scan."""

DIMENSIONS = 128
"""Principal directions kept per row: a third of the model's 384 floats."""

MARGIN = 2.5
"""How many spreads of the unknown residual part a row's estimate is given either way (see the module docstring)."""

MAX_POOL_SHARE = 0.25
"""A pool beyond this share of the rows is not worth gathering: the full rows are scanned instead."""

MIN_ENERGY = 0.6
"""The share of the rows' squared length the basis must hold for the first pass to be used."""

ROUNDING = 1e-4
"""Added to the margin either way: float32 sums of a row's parts differ from its full dot product by rounding,
which decides between rows of equal cosine (many, where entries repeat their words)."""

FIT_SAMPLE = 4_096
"""Rows the basis is fitted from (evenly spaced): the leading eigenvectors of a few thousand rows' moments are
those of all of them, and the fit then costs little beside projecting every row once."""


def pays(rows: int, dim: int) -> bool:
    """True if a first pass may save time on ``rows`` vectors of ``dim`` floats (too few of either: no)."""
    return rows >= MIN_ROWS and dim >= 2 * DIMENSIONS


class Projection:
    """Each row's coordinates on a fitted basis, and the length of its residual.

    Args:
        data: the matrix's rows (all of them, unit length).
        capacity: rows to make room for (the matrix's capacity).
    """

    def __init__(self, data: np.ndarray, capacity: int) -> None:
        n, dim = data.shape
        sample = data[:: -(-n // FIT_SAMPLE) or 1]  # (at most FIT_SAMPLE rows, evenly spaced)
        values, vectors = np.linalg.eigh((sample.T @ sample).astype(np.float64))  # ascending eigenvalues
        self.basis = np.ascontiguousarray(vectors[:, ::-1][:, :DIMENSIONS].T, dtype=np.float32)  # (a direction per row)
        self.spread = 1.0 / math.sqrt(max(1, dim - DIMENSIONS))
        self.fitted_rows = n
        self.changes = 0
        # The sample's share of squared length the basis holds (its leading eigenvalues over their sum), asked
        # before any row is projected: vectors without structure cost no projection, nor its memory.
        self.useful = bool(values.sum() > 0 and values[-DIMENSIONS:].sum() >= MIN_ENERGY * values.sum())
        rows = max(capacity, n) if self.useful else 0
        self.rows = np.zeros((rows, DIMENSIONS), dtype=np.float32)
        self.residual = np.zeros(rows, dtype=np.float32)
        if self.useful and n:
            np.matmul(data, self.basis.T, out=self.rows[:n])
            self.residual[:n] = _residual(data, self.rows[:n])

    def due(self, n: int) -> bool:
        """True when the basis should be fitted again for a matrix of ``n`` rows."""
        return self.changes >= max(self.fitted_rows, MIN_ROWS // 2) or n < self.fitted_rows // 2

    # ------------------------------------------------------------------ kept in step with the matrix
    def grow(self, capacity: int, n: int) -> None:
        """Make room for ``capacity`` rows, keeping the first ``n``."""
        if not self.useful or capacity <= len(self.rows):
            return
        rows = np.zeros((capacity, DIMENSIONS), dtype=np.float32)
        rows[:n] = self.rows[:n]
        residual = np.zeros(capacity, dtype=np.float32)
        residual[:n] = self.residual[:n]
        self.rows, self.residual = rows, residual

    def set(self, row: int, vector: np.ndarray) -> None:
        """Project ``vector`` (unit length) as row ``row``."""
        self.changes += 1
        if self.useful:
            projected = self.rows[row]
            np.vecdot(self.basis, vector, out=projected)
            self.residual[row] = _residual(vector[None], projected[None])[0]

    def move(self, source: int, target: int) -> None:
        """Row ``source`` moves to ``target`` (the matrix filled a hole with its last row)."""
        self.changes += 1
        if self.useful and source != target:
            self.rows[target] = self.rows[source]
            self.residual[target] = self.residual[source]

    # ------------------------------------------------------------------ search
    def pool(self, query: np.ndarray, n: int, k: int, mask: np.ndarray | None) -> np.ndarray | None:
        """The rows (ascending) that may be among the ``k`` best of the first ``n`` for the unit ``query``,
        among those ``mask`` keeps; None when scanning the full rows is the better way."""
        if not self.useful:
            return None
        projected = np.vecdot(self.basis, query)  # (on this thread: no BLAS helper to wake)
        slack = MARGIN * self.spread * math.sqrt(max(0.0, 1.0 - float(projected @ projected)))
        estimate = np.vecdot(self.rows[:n], projected)
        residual = self.residual[:n]
        k = min(k, n if mask is None else int(np.count_nonzero(mask)))
        if k <= 0:
            return None
        ranked = estimate if mask is None else np.where(mask, estimate, -np.inf)
        near = at_least_kth(ranked, k)  # (k rows at least; the k best by estimate among them)
        low = ranked[near] - slack * residual[near]
        bound = np.partition(low, len(low) - k)[len(low) - k]  # (k rows' cosines reach this, but for the margin's odds)
        estimate += slack * residual
        keep = estimate >= bound - 2 * ROUNDING
        if mask is not None:
            keep &= mask
        rows = np.flatnonzero(keep)
        return rows if len(rows) <= MAX_POOL_SHARE * n else None


def _residual(data: np.ndarray, projected: np.ndarray) -> np.ndarray:
    """The length of what the projection leaves out of each row (rows of any length)."""
    left = np.vecdot(data, data) - np.vecdot(projected, projected)
    return np.sqrt(np.maximum(left, 0.0, out=left), out=left)
