"""The vector matrix's first pass over its rows' projections: the exact best rows, exact cosines, kept in step."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from fakes import FakeEmbedder

from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.memory.results import NewEntry
from memdir.storage.directory import projection
from memdir.storage.directory.top_k import top_of
from memdir.storage.directory.vectors import VectorMatrix

DIM = 384


def structured(rng: np.random.Generator, count: int, noise: float = 0.08) -> np.ndarray:
    """Unit vectors near a 40-dimensional subspace, as a store's embeddings of one subject lie."""
    basis = np.linalg.qr(np.random.default_rng(0).standard_normal((DIM, 40)))[0]
    rows = rng.standard_normal((count, 40)) @ basis.T + noise * rng.standard_normal((count, DIM))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def filled(vectors: np.ndarray) -> VectorMatrix:
    matrix = VectorMatrix()
    for i, vector in enumerate(vectors):
        matrix.upsert(f"concept/e{i}.md", vector, type="fact" if i % 3 else "skill")
    return matrix


def exact_top(matrix: VectorMatrix, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> list[int]:
    return top_of(np.vecdot(matrix.data, query), k, mask).tolist()


def assert_in_step(matrix: VectorMatrix) -> None:
    """Every row's projection and residual are those of its full vector on the current basis."""
    first = matrix._first_pass()
    assert first is not None and first.useful
    n = len(matrix)
    np.testing.assert_allclose(first.rows[:n], matrix.data @ first.basis.T, atol=1e-5)
    left = 1.0 - np.square(first.rows[:n]).sum(axis=1)
    np.testing.assert_allclose(first.residual[:n], np.sqrt(np.maximum(left, 0.0)), atol=1e-3)


def test_above_its_size_the_first_pass_finds_the_exact_best_rows():
    rng = np.random.default_rng(1)
    matrix = filled(structured(rng, projection.MIN_ROWS + 500))
    skills = matrix.mask(types=["skill"])
    for query in structured(rng, 20, noise=0.3):
        found = matrix.ranked(query, 50)
        assert found.scores is None  # (the full rows were not all compared)
        assert found.rows.tolist() == exact_top(matrix, query, 50)
        assert matrix.ranked(query, 10, skills).rows.tolist() == exact_top(matrix, query, 10, skills)


def test_below_its_size_every_full_row_is_compared():
    rng = np.random.default_rng(2)
    matrix = filled(structured(rng, projection.MIN_ROWS - 1))
    query = structured(rng, 1)[0]
    found = matrix.ranked(query, 50)
    assert found.scores is not None and len(found.scores) == len(matrix)
    assert found.rows.tolist() == exact_top(matrix, query, 50)


def test_vectors_without_structure_are_scanned_whole():
    """Random vectors: no few directions hold most of their length, so no first pass is made."""
    rng = np.random.default_rng(3)
    rows = rng.standard_normal((projection.MIN_ROWS, DIM)).astype(np.float32)
    matrix = filled(rows / np.linalg.norm(rows, axis=1, keepdims=True))
    found = matrix.ranked(rows[0] / np.linalg.norm(rows[0]), 10)
    assert found.scores is not None and found.rows[0] == 0


def test_every_cosine_is_the_exact_one():
    """Rows outside the pool (a keyword hit the first pass left out) get their exact cosine too."""
    rng = np.random.default_rng(4)
    matrix = filled(structured(rng, projection.MIN_ROWS))
    query = structured(rng, 1)[0]
    found = matrix.ranked(query, 10)
    assert found.scores is None
    rows = np.array([*found.rows, *rng.integers(0, len(matrix), 40)])
    np.testing.assert_array_equal(found.cosines(rows), np.vecdot(matrix.data[rows], query))


def test_removed_and_rewritten_rows_keep_the_projection_right():
    rng = np.random.default_rng(5)
    count = projection.MIN_ROWS + 400
    matrix = filled(structured(rng, count))
    query = structured(rng, 1)[0]
    matrix.ranked(query, 10)  # (fits the basis)
    basis = matrix._first_pass().basis
    for i in rng.choice(count, 300, replace=False):
        matrix.remove(f"concept/e{i}.md")  # (the last row moves into each hole)
    for i, vector in zip(rng.choice(count, 300, replace=False), structured(rng, 300)):
        matrix.upsert(f"concept/e{i}.md", vector)  # (rewritten, or back after its removal)
    assert matrix._first_pass().basis is basis  # (not refitted: the rows were projected on it)
    assert_in_step(matrix)
    for query in structured(rng, 10, noise=0.3):
        assert matrix.ranked(query, 50).rows.tolist() == exact_top(matrix, query, 50)


def test_the_basis_is_fitted_again_as_the_rows_change():
    rng = np.random.default_rng(6)
    matrix = filled(structured(rng, projection.MIN_ROWS))
    query = structured(rng, 1)[0]
    matrix.ranked(query, 10)
    first = matrix._first_pass()
    for i, vector in enumerate(structured(rng, projection.MIN_ROWS)):
        matrix.upsert(f"concept/new{i}.md", vector)
    assert matrix._first_pass() is not first and matrix._first_pass().fitted_rows == 2 * projection.MIN_ROWS
    assert_in_step(matrix)
    assert matrix.ranked(query, 50).rows.tolist() == exact_top(matrix, query, 50)


def test_searches_during_writes_and_refits_see_one_basis(tmp_path, monkeypatch):
    """A writer adds and removes entries (the basis fitted again meanwhile) while another thread
    searches: every search's best entries and cosines are the exact ones of the rows it saw."""
    monkeypatch.setattr(projection, "MIN_ROWS", 60)
    monkeypatch.setattr(projection, "MIN_ENERGY", 0.0)
    monkeypatch.setattr(projection, "MAX_POOL_SHARE", 1.0)
    memory = Memory.open(Settings(root=tmp_path / "memory"), embedder=FakeEmbedder())
    words = [f"w{i}" for i in range(60)]
    rng = np.random.default_rng(7)

    def text() -> str:
        return " ".join(rng.choice(words, 6, p=np.arange(60, 0, -1) / 1830))

    memory.write_many([NewEntry(f"fact/a{i}.md", text()) for i in range(80)])
    index, queries = memory.index, FakeEmbedder().embed([text() for _ in range(20)])
    failures: list[str] = []
    searched: list[int] = []
    done = threading.Event()

    def search() -> None:
        while not done.is_set():
            for query in queries:
                with index.reading():
                    hits = index.semantic_hits(query, FakeEmbedder.model_id, 20)
                    data = index.vectors.data
                    exact = top_of(np.vecdot(data, query), 20)
                    cosines = hits.cosines(hits.keys)
                    if [index.vectors.paths[row] for row in exact] != hits.top:
                        failures.append("best entries")
                    if not np.array_equal(cosines, np.vecdot(data[exact], query)):
                        failures.append("cosines")
                searched.append(len(data))
                time.sleep(0.001)  # (lets the writer take the lock)

    searcher = threading.Thread(target=search)
    searcher.start()
    try:
        for i in range(200):
            memory.write(f"fact/b{i}.md", text())
            if i % 4 == 0:
                memory.delete(f"fact/a{i // 4}.md")
    finally:
        done.set()
        searcher.join()
    assert not failures and len(set(searched)) > 50  # (searches of many states of the rows)
    assert index.vectors._first_pass().fitted_rows > 80
    assert_in_step(index.vectors)
    memory.close()


def test_a_search_through_the_first_pass_ranks_and_scores_as_the_full_scan(tmp_path, monkeypatch):
    """`Memory.search`'s results, scores and cosines are the same whether the first pass ran or not."""
    memory = Memory.open(Settings(root=tmp_path / "memory"), embedder=FakeEmbedder())
    words = [f"w{i}" for i in range(80)]
    rng = np.random.default_rng(8)
    weights = np.arange(80, 0, -1) / 3240
    memory.write_many([NewEntry(f"fact/e{i}.md", " ".join(rng.choice(words, 8, p=weights))) for i in range(400)])
    queries = [" ".join(rng.choice(words, 3, p=weights)) for _ in range(15)]
    full = [memory.search(query, top_k=10) for query in queries]
    monkeypatch.setattr(projection, "MIN_ROWS", 100)
    monkeypatch.setattr(projection, "MIN_ENERGY", 0.0)
    monkeypatch.setattr(projection, "MAX_POOL_SHARE", 1.0)
    first = [memory.search(query, top_k=10) for query in queries]
    assert memory.index.vectors._first_pass() is not None
    assert first == full
    memory.close()


@pytest.fixture(autouse=True)
def _no_helper_threads(monkeypatch):
    """(The full scan's helpers are another test's matter.)"""
    from memdir.storage.directory import vectors

    monkeypatch.setattr(vectors, "PARALLEL_MIN_ROWS", 10**9)
