"""The word-embedding table held only for the words met (`memdir.embeddings.word_table`), with the real model."""

from __future__ import annotations

import math
import threading
from pathlib import Path

import numpy as np
import pytest

from memdir.embeddings import ModelNotFoundError, OnnxEmbedder, resolve_model
from tests.mappings import resident_bytes
from tests.prerequisites import missing_prerequisite

TEXTS = [
    "Deploy the billing service behind the blue-green switch on Fridays.",
    "Caroline went to the LGBTQ support group yesterday and felt accepted.",
    "rollback the postgres schema migration",
    "Ünïcödé, emoji 🙂 and numbers 31415 tokenise into rare word pieces.",
    "short",
    "The kubernetes pod keeps restarting: check the liveness probe's timeout before the memory limit.",
]


@pytest.fixture(scope="module")
def model(model_cache_dir):
    try:
        return resolve_model(cache_dir=model_cache_dir)
    except ModelNotFoundError:
        missing_prerequisite("the embedding model is missing: run `memdir setup`")


@pytest.fixture(scope="module")
def whole_table(model, tmp_path_factory):
    """The model with its whole word table in the graph: a graph that cannot be cached runs from memory."""
    cache_dir = tmp_path_factory.mktemp("unwritable")
    (cache_dir / "onnx").write_text("not a folder")
    embedder = OnnxEmbedder(model, cache_dir, threads=1)
    embedder.warmup()
    assert embedder.word_table is None and embedder.onnx_file is None
    return embedder


@pytest.mark.model
def test_rows_are_held_only_for_the_words_met_and_the_vectors_do_not_change(model, model_cache_dir, whole_table):
    embedder = OnnxEmbedder(model, model_cache_dir, threads=1)
    embedder.warmup()
    table = embedder.word_table
    assert table is not None and table.rows_held == 0 and table.matrix.shape == (30522, 384)

    singles = np.stack([embedder.embed_one(text) for text in TEXTS])
    batched = embedder.embed(TEXTS)
    np.testing.assert_array_equal(singles, np.stack([whole_table.embed_one(text) for text in TEXTS]))
    np.testing.assert_array_equal(batched, whole_table.embed(TEXTS))

    met = {token for encoding in embedder._tokenizer.encode_batch(TEXTS) for token in encoding.ids} | {0}  # (0 pads)
    assert table.rows_held == len(met)
    again = table.rows_held
    embedder.embed(TEXTS[::-1])
    assert table.rows_held == again  # a row is read once
    if Path("/proc/self/smaps").exists():
        written = math.ceil(len(met) * 384 * 4 / 4096) * 4096
        assert resident_bytes(table.matrix.ctypes.data) <= written + 64 * 1024  # not the table's 47 MB


@pytest.mark.model
def test_texts_embedded_at_once_on_many_threads_read_each_row_once(model, model_cache_dir, whole_table):
    embedder = OnnxEmbedder(model, model_cache_dir, threads=1)
    got: dict[int, np.ndarray] = {}
    threads = [threading.Thread(target=lambda i=i: got.__setitem__(i, embedder.embed([TEXTS[i]])[0]))
               for i in range(len(TEXTS))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = np.stack([whole_table.embed_one(text) for text in TEXTS])
    np.testing.assert_array_equal(np.stack([got[i] for i in range(len(TEXTS))]), expected)
    assert embedder.word_table is not None
    renumbered = embedder.word_table.renumber(np.arange(embedder.word_table.matrix.shape[0]))
    assert sorted(renumbered.tolist()) == list(range(len(renumbered)))  # every row once, none twice


@pytest.mark.model
def test_a_cached_graph_without_its_word_table_is_rebuilt(model, tmp_path, whole_table):
    fresh = OnnxEmbedder(model, tmp_path / "cache", threads=1)
    fresh.warmup()
    words = fresh.cached_onnx_path().with_suffix(".words")
    assert words.stat().st_size == 30522 * 384 * 4
    words.write_bytes(words.read_bytes()[:-4])  # a table cut short
    again = OnnxEmbedder(model, tmp_path / "cache", threads=1)
    np.testing.assert_array_equal(again.embed_one(TEXTS[0]), whole_table.embed_one(TEXTS[0]))
    assert again.build_seconds > 0 and words.stat().st_size == 30522 * 384 * 4


@pytest.mark.model
def test_a_cache_cleared_under_a_running_model_takes_no_row_from_it(model, tmp_path, whole_table):
    embedder = OnnxEmbedder(model, tmp_path / "cache", threads=1)
    embedder.embed_one(TEXTS[0])
    embedder.cached_onnx_path().with_suffix(".words").unlink()
    np.testing.assert_array_equal(embedder.embed_one(TEXTS[1]), whole_table.embed_one(TEXTS[1]))  # words not met before
