"""Keyword extraction, stemming, Jaccard and cosine (SwarmMemory's TextSimilarity)."""

from __future__ import annotations

import numpy as np
import pytest

from memdir.core.keywords import extract_keywords, stem, tag_terms, tokenize
from memdir.search.similarity import cosine, jaccard, word_set


def test_jaccard_matches_swarmmemory_example():
    assert jaccard("ruby classes", "ruby modules") == pytest.approx(1 / 3)


def test_jaccard_ignores_stop_words_short_words_and_case():
    assert word_set("The quick brown fox is on it") == {"quick", "brown", "fox"}
    assert jaccard("The Quick fox", "quick FOX of the") == 1.0


def test_jaccard_of_nothing_is_zero():
    assert jaccard("", "") == 0.0
    assert jaccard("the a an", "is") == 0.0


def test_jaccard_accepts_word_collections():
    assert jaccard({"a", "b"}, ["b", "c"]) == pytest.approx(1 / 3)


def test_cosine():
    assert cosine([1, 0], [1, 0]) == pytest.approx(1.0)
    assert cosine([1, 0], [0, 1]) == pytest.approx(0.0)
    assert cosine([0.1, 0.2, 0.3], [0.2, 0.3, 0.4]) == pytest.approx(0.9926, abs=1e-4)
    assert cosine(np.zeros(3), [1, 2, 3]) == 0.0
    with pytest.raises(ValueError):
        cosine([1, 2], [1, 2, 3])


def test_extract_keywords_drops_stop_words_and_repeats_in_order():
    assert extract_keywords("How do I debug the API errors in the API?") == ["debug", "api", "errors"]
    assert extract_keywords("what is it") == []
    assert extract_keywords("Python 3 in 2024") == ["python", "2024"]


def test_stem_is_light_and_consistent():
    assert stem("errors") == "error"
    assert stem("debugging") == "debug"
    assert stem("running") == "run"
    assert stem("classes") == "class"
    assert stem("policies") == "policy"
    assert stem("status") == "status"
    assert stem("api") == "api"


def test_tokenize_and_tag_terms():
    assert tokenize("Hello, World_wide web!") == ["hello", "world", "wide", "web"]
    assert tag_terms(["API-errors", "HTTP"]) == {"api", "error", "http"}
