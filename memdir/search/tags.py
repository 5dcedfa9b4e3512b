"""The tag signal of hybrid search: how many of a query's words each candidate's tags match.

SwarmMemory's fuzzy tag match: a query word matches a tag word with the same (light) stem,
or, both at least 4 letters long, one that is a prefix of the other ("debug" ~ "debugger").
Tags recur across entries and searches far more than whole tag lists, so a `TagMatcher`
files the words of each tag it meets once, and a search looks its words up instead of
parsing its candidates' tags.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from memdir.core.keywords import tag_terms

TAGS_KEPT = 10_000
"""Distinct tags a `TagMatcher` keeps filed; one that meets more starts afresh with the tags of the
search at hand, so a root of many rare tags costs a bounded amount of memory (10,000 two-word tags
took 8.6 MB, their strings included)."""
_NO_TAGS: frozenset[str] = frozenset()


@dataclass(slots=True)
class _Filed:
    """The tags met so far and their words, filed three ways.

    Copy on write: a search reads these while another files more, so a value once filed is never
    changed; filing more words under a key files a new frozenset there (the dictionaries are only
    ever looked up, never iterated, by a reading search).
    """

    words_of: dict[str, frozenset[str]] = field(default_factory=dict)
    """Each tag's stemmed words."""
    tags_with: dict[str, frozenset[str]] = field(default_factory=dict)
    """The tags holding each stemmed word."""
    by_head: dict[str, frozenset[str]] = field(default_factory=dict)
    """Every tag word of 4 letters or more, by its first four: the only ones a query word's prefix can match."""

    def learn(self, tags: Iterable[str]) -> None:
        """File the words of ``tags`` in `tags_with` and `by_head`, then the tags in `words_of`: a search
        in another thread that finds a tag there finds its words filed too. One writer at a time."""
        words_of = {tag: frozenset(tag_terms((tag,))) for tag in tags}
        tags_with: dict[str, set[str]] = {}
        by_head: dict[str, set[str]] = {}
        for tag, terms in words_of.items():
            for term in terms:
                tags_with.setdefault(term, set()).add(tag)
                if len(term) >= 4:
                    by_head.setdefault(term[:4], set()).add(term)
        for filed, added in ((self.tags_with, tags_with), (self.by_head, by_head)):
            for key, values in added.items():
                filed[key] = filed.get(key, _NO_TAGS).union(values)
        self.words_of.update(words_of)


class TagMatcher:
    """Counts the query words each tag list matches, with the words of the tags met so far filed
    (at most ``limit`` tags: see `TAGS_KEPT`). Safe to share between threads: searches read the
    filed words without a lock while one at a time files more (`_Filed`)."""

    def __init__(self, limit: int = TAGS_KEPT) -> None:
        self.limit = limit
        self._filed = _Filed()
        self._filing = threading.Lock()

    def __len__(self) -> int:
        """How many distinct tags are filed now."""
        return len(self._filed.words_of)

    def counts(self, stems: frozenset[str] | set[str], tag_lists: Sequence[tuple[str, ...]]) -> np.ndarray:
        """How many of the query words ``stems`` (light stems) each of ``tag_lists`` matches.

        The tags holding a matching word are found by word, each marked with a bit per query
        word it matches; a tag list counts the words any of its tags match. When no query word
        matches a candidate's tag (the usual case) no candidate's tags are looked at again.
        """
        counts = np.zeros(len(tag_lists))
        distinct: set[str] = set().union(*tag_lists)
        if not stems or not distinct:
            return counts
        filed = self._filed  # (the one this search reads, whatever another search files meanwhile)
        if not filed.words_of.keys() >= distinct:  # (looks each of ``distinct`` up: no iterating the dictionary)
            filed = self._file(distinct)
        bits: dict[str, int] = {}
        for j, word in enumerate(stems):
            near = {word}
            if len(word) >= 4:
                near.update(t for t in filed.by_head.get(word[:4], _NO_TAGS) if t.startswith(word) or word.startswith(t))
            for term in near:
                for tag in filed.tags_with.get(term, _NO_TAGS) & distinct:
                    bits[tag] = bits.get(tag, 0) | 1 << j
        if not bits:
            return counts
        for i, tags in enumerate(tag_lists):
            mask = 0
            for tag in tags:
                mask |= bits.get(tag, 0)
            if mask:
                counts[i] = mask.bit_count()
        return counts

    def _file(self, tags: set[str]) -> _Filed:
        """File those of ``tags`` not filed yet (starting afresh past the limit); the filed tags to read."""
        with self._filing:
            filed = self._filed
            unseen = [tag for tag in tags if tag not in filed.words_of]
            if len(filed.words_of) + len(unseen) > self.limit:
                filed = self._filed = _Filed()
                unseen = list(tags)
            filed.learn(unseen)
            return filed
