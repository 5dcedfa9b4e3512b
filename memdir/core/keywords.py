"""Words of a query or an entry, the way keyword matching sees them.

One tokeniser serves the tag match of hybrid search, Jaccard similarity and the
keyword list handed to the BM25 index, so "API errors" in a query and ``api-error``
in a tag meet on the same terms. Two stemmers: the light `stem` serves the matches
where over-stemming would hurt (tags, Jaccard), and `porter_stem` (the original Porter
algorithm, as SQLite FTS5's ``porter`` tokenizer) makes the terms of the BM25 index and
its queries: on LoCoMo it recalls more than the light stems would (the figures are in
`memdir.storage.directory.postings`).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator
from functools import lru_cache

import snowballstemmer  # uses PyStemmer's C implementation when it is installed

# Lowercased runs of letters and digits (any script); underscores and punctuation split words.
_WORD = re.compile(r"[^\W_]+")

STOP_WORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are aren as at be because been
    before being below between both but by can cannot could couldn did didn do does doesn doing
    don down during each either else ever few for from further get gets got had hadn has hasn have
    haven having he her here hers herself him himself his how i if in into is isn it its itself
    just let ll me more most much must mustn my myself no nor not now of off on once only or other
    ought our ours ourselves out over own re same shan she should shouldn so some such than that
    the their theirs them themselves then there these they this those through to too under until
    up upon us ve very was wasn we were weren what when where which while who whom whose why will
    with won would wouldn yet you your yours yourself yourselves
    """.split()
)

_VOWELS = frozenset("aeiouy")


def words(text: str) -> list[str]:
    """Every word of ``text``, lowercased, in order (stop words kept)."""
    return _WORD.findall(text.lower())


def word_matches(lowered: str) -> Iterator[re.Match[str]]:
    """The words of ``lowered`` (a lowercased text) as `words` finds them, each with where it is."""
    return _WORD.finditer(lowered)


def stem(word: str) -> str:
    """A light English suffix stripper: plurals, ``-ing`` and ``-ed``.

    Deliberately conservative (no Porter step 2-5): it only has to make "errors" meet
    "error" and "debugging" meet "debug" in tag matches; over-stemming would make
    unrelated tags match.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if not _VOWELS.intersection(base):
                return word
            if len(base) > 3 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # running -> run, stopped -> stop
            return base
    return word


_PORTER = snowballstemmer.stemmer("porter")
_PORTER_LOCK = threading.Lock()  # a stemmer object keeps state between calls: not thread-safe
# FTS5's porter tokenizer leaves tokens shorter than 3 or longer than 64 characters unstemmed.
_PORTER_MIN, _PORTER_MAX = 3, 64


@lru_cache(maxsize=1 << 16)
def porter_stem(word: str) -> str:
    """``word`` (lowercased) stemmed by the original Porter algorithm: the terms of the BM25 index.

    "connections", "connected" and "connecting" all become "connect"; "happiness" becomes
    "happi". Cached: a vocabulary is small next to the words stemmed.
    """
    if len(word) < _PORTER_MIN or len(word) > _PORTER_MAX:
        return word
    with _PORTER_LOCK:
        return _PORTER.stemWord(word)


def tokenize(text: str, *, min_len: int = 2, stemmed: bool = False) -> list[str]:
    """Content words of ``text`` in order: lowercased, stop words and short words dropped.

    Args:
        min_len: shortest word kept (digits count as words: "2024" stays).
        stemmed: apply `stem` to each word.
    """
    kept = [w for w in words(text) if len(w) >= min_len and w not in STOP_WORDS]
    return [stem(w) for w in kept] if stemmed else kept


def extract_keywords(query: str, *, limit: int | None = None) -> list[str]:
    """The distinct content words of a query, first occurrence first (SwarmMemory's keyword step).

    These feed both the BM25 OR-query and the tag match; they are not stemmed, as each
    match stems them its own way (`porter_stem` for BM25, `stem` for tags).
    """
    seen: dict[str, None] = {}
    for word in tokenize(query):
        seen.setdefault(word, None)
    found = list(seen)
    return found[:limit] if limit is not None else found


def keyword_terms(query: str) -> list[str]:
    """The query's keywords as the keyword index holds them: Porter stems, first occurrence first."""
    return list(dict.fromkeys(porter_stem(word) for word in extract_keywords(query)))


def short_message_terms(message: str, min_words: int, unknown: set[str] = frozenset()) -> set[str] | None:  # type: ignore[assignment]
    """The keyword terms (Porter stems) of a message that says fewer than ``min_words``
    content words ("thanks!", "hello test"), None for a longer one; ``unknown`` (terms no
    entry holds, such as a name the store has never seen) do not count. Such a message says
    too little for its meaning to pick an entry (its one or two words match something in
    any store, a pleasantry most of all): discovery shows only entries that name one of them."""
    terms = set(keyword_terms(message)) - unknown
    return None if len(terms) >= min_words else terms


def names_any(terms: set[str], *names: str) -> bool:
    """Whether any word of ``names`` (a title, a path, tags) is one of ``terms`` (Porter stems)."""
    return any(porter_stem(word) in terms for name in names for word in words(name))


def tag_terms(tags: Iterable[str]) -> set[str]:
    """The stemmed words of a list of tags: ``["api-errors", "HTTP"]`` -> ``{"api", "error", "http"}``."""
    terms: set[str] = set()
    for tag in tags:
        terms.update(tokenize(tag, min_len=1, stemmed=True))
    return terms
