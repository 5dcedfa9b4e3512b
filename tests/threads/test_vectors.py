"""The thread embeddings cache: vectors added one message at a time stay right, and another process reads them."""

from __future__ import annotations

import numpy as np

from memdir.storage.directory.locking import RootLock
from memdir.threads.vectors import VectorCache
from tests.fakes import FakeEmbedder


def test_vectors_added_one_by_one_stay_right_and_a_new_process_reads_them_without_embedding(tmp_path):
    embedder = FakeEmbedder()
    lock = RootLock(tmp_path / ".lock")
    cache = VectorCache(tmp_path, tmp_path / ".memdir" / "threads", embedder, lock)
    texts = [f"message {i} about topic {i % 7}" for i in range(70)]
    cache.vectors(texts[:3])
    for text in texts[3:]:  # a live thread: one new message at a time, the matrix grows past its room again and again
        cache.vectors([text])
    expected = FakeEmbedder().embed(texts)
    assert np.allclose(cache.vectors(texts), expected)
    assert np.allclose(cache.query(texts[5]), expected[5])
    fresh = FakeEmbedder()
    again = VectorCache(tmp_path, tmp_path / ".memdir" / "threads", fresh, lock)
    assert np.allclose(again.vectors(texts), expected) and fresh.texts_embedded == 0
