"""Word sets of many texts at once, as integer ids — `memdir.search.similarity.word_set` in bulk.

Tokenising 10K entries word by word in Python creates millions of small strings and
takes seconds. Here the texts are handled as one byte array instead:

* texts whose letters and digits are all ASCII (nearly all memory entries; curly quotes,
  dashes and emoji are fine) are joined as UTF-8 and scanned with numpy: a lookup table
  lowercases and marks ASCII letters and digits, token boundaries are where that mark
  changes, and each token of at least 3 characters is hashed (a 64-bit polynomial hash
  of its bytes, computed for all tokens together, one character position per step).
  For such text ``[^\\W_]+`` — the tokeniser's word pattern — matches exactly the runs
  of ``[A-Za-z0-9]``, so the words are the same as ``word_set``'s.
* texts with other letters or digits (``café``, ``東京``) go through ``word_set`` itself
  (Unicode letters, Unicode lowercasing) and their words are hashed the same way, so a
  word gets the same id whichever path it came through.

Stop words are dropped by their hashes. Two different words share an id only if their
64-bit hashes collide (about one chance in 10^9 for a memory with 100K distinct words),
which at worst nudges one Jaccard value.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from memdir.core.keywords import STOP_WORDS
from memdir.search.similarity import JACCARD_MIN_WORD, word_set

_BASE = np.uint64(0x100000001B3)  # odd, so the hash mixes every byte
# A letter or digit outside ASCII: such a text needs the Unicode-aware tokeniser.
_NON_ASCII_WORD_CHAR = re.compile(r"(?![\x00-\x7f])[^\W_]")

_WORD_BYTE = np.zeros(256, dtype=bool)
for _byte in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789":
    _WORD_BYTE[_byte] = True
_LOWER = np.arange(256, dtype=np.uint8)
_LOWER[ord("A"): ord("Z") + 1] += 32


def _hash_spans(codes: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """64-bit polynomial hash of the bytes ``codes[start : start + length]`` for every span."""
    count = starts.size
    hashes = np.zeros(count, dtype=np.uint64)
    if count == 0:
        return hashes
    # Longest first, so step k only touches the spans longer than k (a radix sort for short words).
    small = int(lengths.max()) < 1 << 16
    order = np.argsort(lengths.astype(np.uint16) if small else lengths, kind="stable")[::-1]
    by_length = lengths[order]
    span_starts = starts[order]
    ascending = by_length[::-1]
    for k in range(int(by_length[0])):
        active = count - int(np.searchsorted(ascending, k, side="right"))
        hashes[:active] = hashes[:active] * _BASE + codes[span_starts[:active] + k]
    hashes = hashes * _BASE + lengths[order].astype(np.uint64)  # the length too, against prefix look-alikes
    out = np.empty_like(hashes)
    out[order] = hashes
    return out


def _stop_hashes() -> np.ndarray:
    words = sorted(word for word in STOP_WORDS if len(word) >= JACCARD_MIN_WORD)
    blob = np.frombuffer("\n".join(words).encode("ascii"), dtype=np.uint8)
    lengths = np.array([len(word) for word in words], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths + 1)[:-1])).astype(np.int64)
    return np.sort(_hash_spans(blob, starts, lengths))


_STOP = _stop_hashes()


def _simple(text: str) -> bool:
    """True if every letter and digit of ``text`` is ASCII (so bytes can be tokenised directly)."""
    return text.isascii() or _NON_ASCII_WORD_CHAR.search(text) is None


def _ascii_words(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(text index, word hash) of every kept word occurrence in `_simple` ``texts``.

    Bytes of non-ASCII characters (all separators in such texts) are never word bytes.
    """
    if not texts:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64)
    encoded = [text.encode("utf-8") for text in texts]
    raw = np.frombuffer(b"\n".join(encoded), dtype=np.uint8)
    is_word = np.concatenate(([False], _WORD_BYTE[raw], [False]))
    edges = np.diff(is_word.astype(np.int8))
    starts = np.flatnonzero(edges == 1)
    lengths = np.flatnonzero(edges == -1) - starts
    long_enough = lengths >= JACCARD_MIN_WORD
    starts, lengths = starts[long_enough], lengths[long_enough]
    hashes = _hash_spans(_LOWER[raw], starts, lengths)
    text_starts = np.concatenate(([0], np.cumsum([len(text) + 1 for text in encoded])[:-1]))
    owners = np.searchsorted(text_starts, starts, side="right") - 1
    where = np.searchsorted(_STOP, hashes).clip(max=_STOP.size - 1)
    keep = _STOP[where] != hashes
    return owners[keep].astype(np.int64), hashes[keep]


def _unicode_words(texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(text index, word hash) of every word of other ``texts``, tokenised by ``word_set``."""
    owners: list[int] = []
    words: list[str] = []
    for index, text in enumerate(texts):
        found = word_set(text)
        owners.extend([index] * len(found))
        words.extend(found)
    if not words:
        return np.zeros(0, np.int64), np.zeros(0, np.uint64)
    encoded = [word.encode("utf-8") for word in words]
    lengths = np.array([len(word) for word in encoded], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths + 1)[:-1])).astype(np.int64)
    blob = np.frombuffer(b"\n".join(encoded), dtype=np.uint8)
    return np.asarray(owners, dtype=np.int64), _hash_spans(blob, starts, lengths)


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique`` by sorting (faster here than numpy 2's hash-based unique on large int64 keys)."""
    ordered = np.sort(values)
    keep = np.ones(ordered.size, dtype=bool)
    keep[1:] = ordered[1:] != ordered[:-1]
    return ordered[keep]


def word_id_sets(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray, int]:
    """Every text's set of words as ids: (row of each id, word id, number of distinct words).

    Rows are sorted and each (row, id) appears once; ids number the distinct words 0..n-1.
    """
    simple = [_simple(text) for text in texts]
    plain = [index for index, flag in enumerate(simple) if flag]
    other = [index for index, flag in enumerate(simple) if not flag]
    rows_a, hashes_a = _ascii_words([texts[i] for i in plain])
    rows_u, hashes_u = _unicode_words([texts[i] for i in other])
    rows = np.concatenate((np.asarray(plain, dtype=np.int64)[rows_a], np.asarray(other, dtype=np.int64)[rows_u]))
    hashes = np.concatenate((hashes_a, hashes_u))
    vocabulary, ids = np.unique(hashes, return_inverse=True)
    size = max(int(vocabulary.size), 1)
    pairs = sorted_unique(rows * size + ids.astype(np.int64).ravel())  # each word once per text, rows sorted
    return pairs // size, pairs % size, int(vocabulary.size)


__all__ = ["sorted_unique", "word_id_sets"]
