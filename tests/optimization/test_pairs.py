"""Pairwise similarity: the matrix and prefix-filtered results equal a brute-force comparison of every pair."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdir.optimization.pairs import WordSets, cosine_pairs, duplicate_pairs, related_pairs
from memdir.search.similarity import cosine, jaccard, word_set

VOCABULARY = [f"{word}{n}" for word in ("ruby", "class", "method", "python", "error", "retry", "cache") for n in range(30)]


def corpus(seed: int, size: int = 160) -> list[str]:
    """Random texts, a fifth of them near-copies of an earlier one (a few words changed)."""
    rng = random.Random(seed)
    texts: list[str] = []
    for k in range(size):
        if k % 5 == 4 and texts:
            words = rng.choice(texts).split()
            for _ in range(rng.randint(0, 3)):
                if words:
                    words[rng.randrange(len(words))] = rng.choice(VOCABULARY)
            texts.append(" ".join(words))
        else:
            pool = VOCABULARY[: rng.randint(5, len(VOCABULARY))]
            texts.append(" ".join(rng.choices(pool, k=rng.randint(0, 40))))
    return texts


def unit_rows(n: int, dim: int = 24, seed: int = 0) -> np.ndarray:
    matrix = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


def as_set(pairs) -> set[tuple[int, int]]:
    return {(int(i), int(j)) for i, j in zip(pairs.i, pairs.j)}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("threshold", [0.1, 0.3, 0.5, 0.7, 0.85, 0.95, 1.0])
def test_jaccard_pairs_equal_brute_force(seed, threshold):
    texts = corpus(seed)
    found = WordSets.from_texts(texts).pairs_at_least(threshold)
    sets = [word_set(text) for text in texts]
    expected = {
        (i, j) for i, j in itertools.combinations(range(len(texts)), 2) if jaccard(sets[i], sets[j]) >= threshold
    }
    assert as_set(found) == expected
    for i, j, value in zip(found.i, found.j, found.similarity):
        assert value == pytest.approx(jaccard(texts[int(i)], texts[int(j)]), abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sets(st.sampled_from(["aaa", "bbb", "ccc", "ddd", "eee", "fff", "ggg"]), max_size=7), max_size=12),
    st.floats(min_value=0.05, max_value=1.0),
)
def test_jaccard_pairs_property(sets, threshold):
    words = WordSets(sets)
    expected = {
        (i, j) for i, j in itertools.combinations(range(len(sets)), 2) if jaccard(sets[i], sets[j]) >= threshold
    }
    assert as_set(words.pairs_at_least(threshold)) == expected


def test_exact_intersections_and_jaccard():
    texts = ["ruby classes modules", "ruby modules mixins", "", "python"]
    words = WordSets.from_texts(texts)
    a, b = np.array([0, 0, 2, 1]), np.array([1, 3, 2, 0])
    assert words.intersections(a, b).tolist() == [2, 0, 0, 2]
    assert words.jaccard(a, b).tolist() == [jaccard(texts[0], texts[1]), 0.0, 0.0, jaccard(texts[1], texts[0])]
    assert WordSets.from_texts(["ruby classes", "ruby modules"]).jaccard(np.array([0]), np.array([1]))[0] == pytest.approx(1 / 3)


def test_word_sets_use_swarm_memory_tokenizer():
    assert word_set("The quick brown fox") == {"quick", "brown", "fox"}
    words = WordSets.from_texts(["The quick brown fox", "quick brown fox!"])
    assert words.sizes.tolist() == [3, 3]
    assert words.jaccard(np.array([0]), np.array([1]))[0] == 1.0


MIXED = [
    "The quick brown Fox_jumps over THE lazy dog in 2024!",
    "Café naïve résumé über ÉCOLE straße — the quick fox",
    "snake_case_words and CamelCase, tab\tseparated\nlines",
    "",
    "a an the of to",
    "x" * 3000 + " yy zzz quick",
    "İstanbul DİYARBAKIR quick brown",
    "emoji 🙂 between words quick brown fox",
    "ab abc abcd ABCD Abcd 007 0070",
    "curly ’quotes’ and em—dashes… don’t split words",
    "superscripts x² and ½ fractions, Kelvin \u212a",
]


def test_bulk_tokenizer_equals_word_set_for_ascii_and_unicode():
    bulk = WordSets.from_texts(MIXED)
    reference = WordSets([word_set(text) for text in MIXED])
    assert bulk.sizes.tolist() == reference.sizes.tolist() == [len(word_set(text)) for text in MIXED]
    a, b = map(np.array, zip(*itertools.combinations(range(len(MIXED)), 2)))
    assert bulk.jaccard(a, b).tolist() == pytest.approx([jaccard(MIXED[i], MIXED[j]) for i, j in zip(a, b)])


@pytest.mark.parametrize("block_rows", [1, 7, 64, 1024])
def test_cosine_pairs_equal_brute_force_in_any_block_size(block_rows):
    matrix = unit_rows(150)
    full = matrix.astype(np.float64) @ matrix.T.astype(np.float64)
    found = cosine_pairs(matrix, 0.3, 0.6, block_rows=block_rows)
    expected = {(i, j) for i in range(150) for j in range(i + 1, 150) if 0.3 <= full[i, j] < 0.6}
    # float32 products may differ from float64 right at the bounds; compare away from them
    margin = {(i, j) for i in range(150) for j in range(i + 1, 150) if min(abs(full[i, j] - 0.3), abs(full[i, j] - 0.6)) < 1e-5}
    assert as_set(found) - margin == expected - margin
    for i, j, value in zip(found.i, found.j, found.similarity):
        assert value == pytest.approx(cosine(matrix[i], matrix[j]), abs=1e-5)


def test_cosine_pairs_without_upper_bound_and_empty_matrix():
    matrix = unit_rows(3)
    matrix[2] = matrix[0]
    assert as_set(cosine_pairs(matrix, 0.99)) == {(0, 2)}
    assert len(cosine_pairs(np.zeros((0, 8), np.float32), 0.5)) == 0


def test_duplicates_take_the_higher_of_jaccard_and_cosine():
    texts = [
        "ruby classes define objects with methods",  # 0
        "ruby classes define objects with methods too",  # 1: same words -> jaccard high
        "completely different words here",  # 2
        "yet another unrelated sentence",  # 3: vector equal to 2's -> cosine 1
        "no vector for this ruby classes define objects with methods",  # 4: not embedded
    ]
    words = WordSets.from_texts(texts)
    matrix = unit_rows(4, seed=3)
    matrix[3] = matrix[2]
    found = duplicate_pairs(words, matrix, [0, 1, 2, 3], 0.85)
    by_pair = {(p.a, p.b): p for p in found}

    def brute(i, j):
        cos = cosine(matrix[i], matrix[j]) if max(i, j) < 4 else -1.0
        return max(jaccard(texts[i], texts[j]), cos)

    assert set(by_pair) == {(i, j) for i, j in itertools.combinations(range(5), 2) if brute(i, j) >= 0.85}
    assert {(0, 1), (2, 3)} <= set(by_pair)
    assert by_pair[(0, 1)].jaccard == pytest.approx(jaccard(texts[0], texts[1]))
    assert by_pair[(0, 1)].similarity == max(by_pair[(0, 1)].jaccard, by_pair[(0, 1)].cosine)
    assert by_pair[(2, 3)].cosine == pytest.approx(1.0, abs=1e-6) and by_pair[(2, 3)].similarity == pytest.approx(1.0, abs=1e-6)
    assert [p.similarity for p in found] == sorted((p.similarity for p in found), reverse=True)


def test_duplicates_of_entries_without_vectors_have_no_cosine():
    texts = ["alpha beta gamma delta", "alpha beta gamma delta", "other words entirely"]
    found = duplicate_pairs(WordSets.from_texts(texts), np.zeros((0, 8), np.float32), [], 0.85)
    assert [(p.a, p.b, p.similarity, p.cosine) for p in found] == [(0, 1, 1.0, None)]


def test_related_pairs_map_rows_to_documents():
    matrix = unit_rows(40, seed=5)
    rows = np.arange(40) * 2 + 1  # documents 1, 3, 5, ... carry the vectors
    found = related_pairs(matrix, rows, 0.2, 0.5)
    full = matrix @ matrix.T
    expected = {(2 * i + 1, 2 * j + 1) for i in range(40) for j in range(i + 1, 40) if 0.2 <= full[i, j] < 0.5}
    assert {(p.a, p.b) for p in found} == expected
    assert all(p.a < p.b for p in found)


def test_threshold_must_be_a_fraction():
    with pytest.raises(ValueError):
        WordSets.from_texts(["a b c"]).pairs_at_least(0.0)
