"""The in-memory keyword index of a root: BM25 postings plus what results show of each entry.

Why not query SQLite FTS5 per search (as memdir did first): at 100K entries an FTS5
OR-query of a few keywords took 7-12 ms and the candidates' rows another ~1 ms, most
of the 12 ms search budget. Here a query term costs a few numpy operations over its
posting list (about 1 ms for a whole query at 100K entries, 0.1 ms at 10K), and the
title, type and tags of a hit are a list lookup. SQLite stays the shared, persistent,
multi-process source: ``entry_terms`` holds each entry's term ids and per-column
counts, so building this index at open is numpy work only (no tokenising).

Layout: each entry is a *slot*, never reused until the next compaction (an update kills
the old slot and appends a new one). Postings are CSR, term id -> ascending slots and
column-weighted term frequencies; slots added since the last build sit in small
per-term lists. Dead slots stay in the postings (they score 0 and are subtracted from
document frequencies) until dead plus added slots reach a quarter of all slots; then
everything is rebuilt from the live slots, in memory.

BM25 is FTS5's ``bm25()`` (k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5)),
at least 1e-6; a term's frequency is the column-weighted sum of its occurrences; an
entry's length is all its words), computed from the current postings at query time,
so updates never need a global recomputation. Terms are Porter stems
(`memdir.core.keywords.porter_stem`, the algorithm of FTS5's ``porter`` tokenizer):
memdir's light stems lost LoCoMo hybrid recall@10 (0.652 against 0.662).

Each slot also keeps its entry's row id in the index (the order entries were first
written, which an update keeps), so that `neighbours` can tell which entries were written
just before and after one in its folder: the turns around a conversation turn.

Not thread-safe by itself; the derived index serialises access.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import cast

import numpy as np

from memdir.storage.bm25 import K1, B, bm25_idf
from memdir.storage.directory.vectors import _Codes
from memdir.storage.records import folder_of

_COMPACT_MIN = 1024
_EMPTY_SLOTS = np.zeros(0, dtype=np.int32)
_EMPTY_TF = np.zeros(0, dtype=np.float32)


_ROW_BITS = 40
_UNKNOWN_ROW = 1 << (_ROW_BITS - 1)


def _written_key(folder_code: np.ndarray | int, row_id: np.ndarray | int, slot: np.ndarray | int) -> np.ndarray:
    """One number per entry that sorts by folder, then by when it was first written: its row id
    in the index, or (not known, as for an entry added by hand) after every known one, by slot."""
    row = np.where(np.asarray(row_id) >= 0, row_id, _UNKNOWN_ROW + np.asarray(slot))
    return (np.asarray(folder_code, dtype=np.int64) << _ROW_BITS) | row.astype(np.int64)


@dataclass(slots=True)
class _Query:
    """The postings of one query's terms (`KeywordIndex._postings`), each term at its ``place``."""

    place: dict[str, int]
    slots: list[np.ndarray]  # ascending, dead slots included
    tf: list[np.ndarray]
    hits: list[int]  # live entries holding each term
    bits: np.ndarray | None = None  # (terms / 8, slots): bit ``place % 8`` of row ``place // 8`` set where a slot holds it (`holding`)


@dataclass(frozen=True, slots=True)
class KeywordDoc:
    """One entry as the keyword index sees it (made by `memdir.storage.directory.index_db.write_row`)."""

    path: str
    title: str
    type: str | None
    tags: tuple[str, ...]
    term_ids: np.ndarray  # ids in the shared ``terms`` table
    counts: np.ndarray  # (len(term_ids), 4): occurrences in title, tags, domain, content
    length: int  # all words of the entry
    terms: Sequence[str] = ()  # the words of ``term_ids``, when known (teaches the vocabulary)
    row_id: int = -1  # the entry's id in the index: the order entries were first written (-1: after all others)


class KeywordIndex:
    """BM25 over the non-stub entries of a root, with their title, type and tags.

    Args:
        column_weights: weights of title, tags, domain and content occurrences.
        renumbered: told, after a compaction renumbered the slots, each old slot's new one
            (-1 for a dead one): whoever keeps slots beside their own data (the vector matrix).
    """

    def __init__(
        self, column_weights: Sequence[float] = (4.0, 3.0, 2.0, 1.0),
        renumbered: Callable[[np.ndarray], None] | None = None,
    ) -> None:
        self.weights = np.asarray(column_weights, dtype=np.float32)
        self._renumbered = renumbered
        self.changes = 0
        """Grows with every change of the entries (callers keep what they derived from one state)."""
        self.clear()

    def clear(self) -> None:
        self.vocab: dict[str, int] = {}  # term -> id in the ``terms`` table
        self.vocab_max = 0
        self.paths: list[str] = []  # per slot (dead slots keep theirs until compaction)
        self.titles: list[str] = []
        self.types: list[str | None] = []
        self._tags: list[str | tuple[str, ...]] = []  # newline-joined until first asked for
        self._slot_of: dict[str, int] = {}
        self._type_codes = _Codes()
        self._folder_codes = _Codes()
        self._type_code = np.zeros(0, dtype=np.int32)
        self._folder_code = np.zeros(0, dtype=np.int32)
        self._length = np.zeros(0, dtype=np.float32)
        self._alive = np.zeros(0, dtype=bool)
        self._written = np.zeros(0, dtype=np.int64)  # per slot: its folder, then when first written (`_written_key`)
        self._sequence: tuple[np.ndarray, np.ndarray] | None = None  # see `neighbours`
        self._tag_slots: dict[str, list[int]] | None = None  # built on the first tag filter
        self._offsets = np.zeros(1, dtype=np.int64)
        self._post_slots = _EMPTY_SLOTS
        self._post_tf = _EMPTY_TF
        self._extra: dict[int, tuple[list[int], list[float]]] = {}
        self._added = 0
        self._dead = 0
        self._total_length = 0.0
        self._norm: np.ndarray | None = None
        self._query: _Query | None = None  # see `_postings`
        self.changes += 1

    def _changed(self) -> None:
        """A posting came or went: the derived norms and the cached query are stale."""
        self._norm = None
        self._query = None
        self.changes += 1

    # ------------------------------------------------------------------ size & lookup
    def __len__(self) -> int:
        return len(self._slot_of)

    def __contains__(self, path: object) -> bool:
        return path in self._slot_of

    def slot_of(self, path: str) -> int | None:
        return self._slot_of.get(path)

    def slots_of(self, paths: Sequence[str]) -> np.ndarray:
        """The slot of each of ``paths`` (-1 for a path not indexed), looked up in one pass."""
        return np.fromiter(map(self._slot_of.get, paths, repeat(-1)), dtype=np.int64, count=len(paths))

    def tags_of(self, slot: int) -> tuple[str, ...]:
        """The tags of a slot (parsed on first use: splitting 100K tag strings at open costs 0.2 s).

        Each tag is kept once (`sys.intern`), however many entries carry it: a root has few distinct
        tags, so a search's candidates share a few strings that stay in the CPU's caches, and each
        entry costs its tuple only."""
        tags = self._tags[slot]
        if isinstance(tags, str):
            tags = self._tags[slot] = tuple(map(sys.intern, tags.split("\n"))) if tags else ()
        return tags

    def tags_at(self, slots: list[int]) -> list[tuple[str, ...]]:
        """The tags of each of ``slots`` (as `tags_of`, in one pass when all are parsed already)."""
        found = list(map(self._tags.__getitem__, slots))
        if str in set(map(type, found)):
            return [self.tags_of(slot) if isinstance(tags, str) else tags for slot, tags in zip(slots, found)]
        return cast("list[tuple[str, ...]]", found)

    def learn(self, pairs: Iterable[tuple[str, int]]) -> None:
        """Add (term, id) pairs of the shared vocabulary."""
        for term, term_id in pairs:
            self.vocab[term] = term_id
            if term_id > self.vocab_max:
                self.vocab_max = term_id

    # ------------------------------------------------------------------ building
    def load(
        self,
        paths: Sequence[str],
        titles: Sequence[str],
        types: Sequence[str | None],
        tags: Sequence[str],
        id_blobs: Sequence[bytes],
        count_blobs: Sequence[bytes],
        lengths: Sequence[int],
        row_ids: Sequence[int] | None = None,
    ) -> None:
        """Replace every entry at once (open, full reload); the vocabulary is kept.

        ``tags`` are the index's newline-joined strings; blobs are ``entry_terms``'s;
        ``row_ids`` the entries' ids in the index (default: the order given).
        """
        vocab, vocab_max = self.vocab, self.vocab_max
        self.clear()
        self.vocab, self.vocab_max = vocab, vocab_max
        n = len(paths)
        self.paths, self.titles, self.types = list(paths), list(titles), list(types)
        self._tags = list(tags)
        self._slot_of = dict(zip(self.paths, range(n)))
        self._type_code = self._type_codes.encode(self.types)
        self._folder_code = self._folder_codes.encode([p[: p.rfind("/")] if "/" in p else "" for p in self.paths])
        self._length = np.asarray(lengths, dtype=np.float32).reshape(n)
        self._alive = np.ones(n, dtype=bool)
        ids = np.asarray(row_ids if row_ids is not None else range(n), dtype=np.int64).reshape(n)
        self._written = _written_key(self._folder_code[:n], ids, np.arange(n))
        self._total_length = float(self._length.sum(dtype=np.float64))
        sizes = np.fromiter(map(len, id_blobs), dtype=np.int64, count=n) // 4
        ids = np.frombuffer(b"".join(id_blobs), dtype="<u4")
        counts = np.frombuffer(b"".join(count_blobs), dtype="<u2").reshape(-1, 4)
        tf = np.zeros(len(counts), dtype=np.float32)
        for column, weight in enumerate(self.weights.tolist()):  # no (postings, 4) float copy
            tf += np.float32(weight) * counts[:, column]
        self._build(ids, np.repeat(np.arange(n, dtype=np.int32), sizes), tf)

    def _build(self, ids: np.ndarray, slots: np.ndarray, tf: np.ndarray) -> None:
        """CSR postings from (term id, slot, tf) triples given in ascending slot order."""
        size = max(self.vocab_max, int(ids.max()) if len(ids) else 0) + 1
        # a stable sort keeps each term's slots ascending; 16-bit keys get numpy's radix sort
        keys = ids.astype(np.uint16) if size <= 1 << 16 else ids
        order = np.argsort(keys, kind="stable")
        self._offsets = np.zeros(size + 1, dtype=np.int64)
        np.cumsum(np.bincount(ids, minlength=size), out=self._offsets[1:])
        self._post_slots = slots[order].astype(np.int32, copy=False)
        self._post_tf = tf[order].astype(np.float32, copy=False)
        self._extra = {}
        self._added = 0
        self._changed()

    # ------------------------------------------------------------------ changes
    def add(self, doc: KeywordDoc) -> None:
        """Insert or replace the entry ``doc.path``."""
        if doc.terms:
            self.learn(zip(doc.terms, (int(i) for i in doc.term_ids)))
        if doc.path in self._slot_of:
            self.remove(doc.path)
        slot = len(self.paths)
        if slot >= len(self._alive):
            self._grow(slot + 1)
        self.paths.append(doc.path)
        self.titles.append(doc.title)
        self.types.append(doc.type)
        self._tags.append(tuple(map(sys.intern, doc.tags)))
        self._slot_of[doc.path] = slot
        self._type_code[slot] = self._type_codes.code(doc.type)
        self._folder_code[slot] = self._folder_codes.code(folder_of(doc.path))
        self._length[slot] = doc.length
        self._alive[slot] = True
        self._written[slot] = key = _written_key(self._folder_code[slot], doc.row_id, slot)
        if self._sequence is not None:
            keys, order = self._sequence
            at = int(np.searchsorted(keys, key))
            self._sequence = np.insert(keys, at, key), np.insert(order, at, slot)
        self._total_length += doc.length
        tf = np.asarray(doc.counts, dtype=np.float32).reshape(-1, 4) @ self.weights
        for term_id, freq in zip(np.asarray(doc.term_ids).tolist(), tf.tolist()):
            slots, freqs = self._extra.setdefault(term_id, ([], []))
            slots.append(slot)
            freqs.append(freq)
        if self._tag_slots is not None:
            for tag in {t.casefold() for t in doc.tags}:
                self._tag_slots.setdefault(tag, []).append(slot)
        self._added += 1
        self._changed()
        self._maybe_compact()

    def remove(self, path: str) -> bool:
        """Drop the entry ``path``; False if absent."""
        slot = self._slot_of.pop(path, None)
        if slot is None:
            return False
        self._alive[slot] = False
        if self._sequence is not None:
            keys, slots = self._sequence
            at = int(np.searchsorted(keys, self._written[slot]))
            self._sequence = np.delete(keys, at), np.delete(slots, at)
        self._total_length -= float(self._length[slot])
        self._dead += 1
        self._changed()
        self._maybe_compact()
        return True

    def _grow(self, needed: int) -> None:
        capacity = max(256, 2 * len(self._alive), needed)
        for name in ("_type_code", "_folder_code", "_length", "_alive", "_written"):
            old = getattr(self, name)
            grown = np.zeros(capacity, dtype=old.dtype)
            grown[: len(old)] = old
            setattr(self, name, grown)

    def _maybe_compact(self) -> None:
        if self._dead + self._added > max(_COMPACT_MIN, len(self.paths) // 4):
            self._compact()

    def _compact(self) -> None:
        """Rebuild the postings from the live slots only, renumbering them in order."""
        n = len(self.paths)
        alive = self._alive[:n]
        new_slot = np.cumsum(alive, dtype=np.int64) - 1
        base_ids = np.repeat(np.arange(len(self._offsets) - 1, dtype=np.int64), np.diff(self._offsets))
        extra_ids = [np.full(len(s), t, dtype=np.int64) for t, (s, _) in self._extra.items()]
        extra_slots = [np.asarray(s, dtype=np.int32) for s, _ in self._extra.values()]
        extra_tf = [np.asarray(f, dtype=np.float32) for _, f in self._extra.values()]
        ids = np.concatenate([base_ids, *extra_ids])
        slots = np.concatenate([self._post_slots, *extra_slots])
        tf = np.concatenate([self._post_tf, *extra_tf])
        keep = alive[slots]
        ids, slots, tf = ids[keep], new_slot[slots[keep]].astype(np.int32), tf[keep]
        order = np.argsort(slots, kind="stable")  # _build wants ascending slots
        live = np.flatnonzero(alive)
        pick = live.tolist()
        self.paths = [self.paths[i] for i in pick]
        self.titles = [self.titles[i] for i in pick]
        self.types = [self.types[i] for i in pick]
        self._tags = [self._tags[i] for i in pick]
        self._slot_of = dict(zip(self.paths, range(len(pick))))
        self._type_code = self._type_code[live]
        self._folder_code = self._folder_code[live]
        self._length = self._length[live]
        self._alive = np.ones(len(pick), dtype=bool)
        self._written = self._written[live]  # same folders, same writing order
        self._sequence = None
        self._tag_slots = None
        self._dead = 0
        self._build(ids[order], slots[order], tf[order])
        if self._renumbered is not None:
            new_slot[~alive] = -1
            self._renumbered(new_slot)

    # ------------------------------------------------------------------ queries
    def _posting(self, term_id: int) -> tuple[np.ndarray, np.ndarray]:
        """(ascending slots, weighted tf) of a term, dead slots included."""
        if term_id + 1 < len(self._offsets):
            lo, hi = self._offsets[term_id], self._offsets[term_id + 1]
            slots, tf = self._post_slots[lo:hi], self._post_tf[lo:hi]
        else:
            slots, tf = _EMPTY_SLOTS, _EMPTY_TF
        extra = self._extra.get(term_id)
        if extra:
            slots = np.concatenate([slots, np.asarray(extra[0], dtype=np.int32)])
            tf = np.concatenate([tf, np.asarray(extra[1], dtype=np.float32)])
        return slots, tf

    def _norms(self) -> np.ndarray:
        """k1 * (1 - b + b * length / avgdl) per slot, infinite for dead slots (so they score 0)."""
        if self._norm is None:
            n = len(self.paths)
            live = len(self._slot_of)
            avgdl = self._total_length / live if live and self._total_length > 0 else 1.0
            norm = K1 * (1.0 - B + B * self._length[:n] / np.float32(avgdl))
            norm[~self._alive[:n]] = np.inf
            self._norm = norm.astype(np.float32, copy=False)
        return self._norm

    def search(
        self,
        terms: Sequence[str],
        limit: int,
        *,
        types: Sequence[str] | None = None,
        path_prefix: str | None = None,
        tags: Sequence[str] | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``limit`` best slots by BM25 among entries with any of ``terms`` (stemmed) that pass
        the filters: (slots, positive scores), best first (ties by slot)."""
        live = len(self._slot_of)
        if not live or limit <= 0:
            return _EMPTY_SLOTS, _EMPTY_TF
        query = self._postings(terms)
        used = [at for at in map(query.place.__getitem__, terms) if query.hits[at] > 0]  # one per query keyword, as FTS5 scored one phrase per keyword
        if not used:
            return _EMPTY_SLOTS, _EMPTY_TF
        weights = []
        for at in used:
            idf = bm25_idf(live, query.hits[at])
            weights.append(np.float32((K1 + 1.0) * (idf if idf > 0 else 1e-6)))
        slots = np.concatenate([query.slots[at] for at in used])
        tf = np.concatenate([query.tf[at] for at in used])
        weight = np.array(weights, dtype=np.float32).repeat([len(query.slots[at]) for at in used])
        scores = np.zeros(len(self.paths), dtype=np.float32)
        np.add.at(scores, slots, tf * weight / (tf + self._norms()[slots]))  # (term by term, in float32)
        matched = (scores != 0).nonzero()[0].astype(np.int32)  # (numpy's nonzero of floats is 5-15x slower)
        if types is not None or path_prefix or tags is not None:
            matched = matched[self._keep(matched, types, path_prefix, tags)]
        found = scores[matched]
        if limit < len(matched):
            part = (-found).argpartition(limit - 1)[:limit]
            part.sort()  # slot order, so the stable sort below breaks ties by slot
            matched, found = matched[part], found[part]
        order = (-found).argsort(kind="stable")
        return matched[order], found[order]

    def _live_hits(self, slots: np.ndarray) -> int:
        """How many of a posting's ``slots`` are live entries (its document frequency)."""
        return len(slots) - (int(np.count_nonzero(~self._alive[slots])) if self._dead else 0)

    def document_frequency(self, term: str) -> int:
        """How many live entries contain ``term`` (a Porter stem); 0 for a word never stored."""
        query = self._query
        if query is not None and term in query.place:
            return query.hits[query.place[term]]
        term_id = self.vocab.get(term)
        return 0 if term_id is None else max(0, self._live_hits(self._posting(term_id)[0]))

    def _postings(self, terms: Iterable[str]) -> _Query:
        """The postings of ``terms``: those of the last query asked about, while it holds them all and
        the index has not changed since (a search asks for its words' BM25, idf, and which candidates and
        neighbours hold each), else read anew."""
        query = self._query
        terms = list(terms)
        if query is not None and all(term in query.place for term in terms):
            return query
        place = dict.fromkeys(terms, 0)
        slots: list[np.ndarray] = []
        tf: list[np.ndarray] = []
        for at, term in enumerate(place):
            place[term] = at
            term_id = self.vocab.get(term)
            term_slots, term_tf = self._posting(term_id) if term_id is not None else (_EMPTY_SLOTS, _EMPTY_TF)
            slots.append(term_slots)
            tf.append(term_tf)
        hits = [max(0, self._live_hits(posting)) for posting in slots]
        self._query = query = _Query(place, slots, tf, hits)
        return query

    def idf(self, terms: Iterable[str]) -> dict[str, float]:
        """Each term's BM25 idf in this index (negative for a term in more than half the entries).

        A term no entry contains gets the formula's value for 0 entries, above any stored
        term's: a word the store has never seen (a name it does not know) is the rarest
        word of a query, and an entry that matches only its common words covers little of it.
        """
        live = len(self._slot_of)
        return {term: bm25_idf(live, self.document_frequency(term)) for term in terms}

    def _keep(
        self, slots: np.ndarray, types: Sequence[str] | None, prefix: str | None, tags: Sequence[str] | None
    ) -> np.ndarray:
        """Which of ``slots`` pass the filters (as `memdir.storage.directory.vectors.VectorMatrix.mask`)."""
        keep = np.ones(len(slots), dtype=bool)
        if types is not None:
            keep &= np.isin(self._type_code[slots], [self._type_codes.find(t) for t in types])
        if prefix:
            if prefix.endswith(".md"):
                keep &= slots == self._slot_of.get(prefix, -1)
            else:
                folder = prefix.strip("/")
                inside = folder + "/"
                names = self._folder_codes.names
                codes = [c for c, name in enumerate(names) if name == folder or (name or "").startswith(inside)]
                keep &= np.isin(self._folder_code[slots], codes)
        if tags is not None:
            index = self._tag_index()
            tagged = [s for tag in {t.casefold() for t in tags} for s in index.get(tag, ())]
            keep &= np.isin(slots, np.asarray(tagged, dtype=np.int32))
        return keep

    def _tag_index(self) -> dict[str, list[int]]:
        if self._tag_slots is None:
            index: dict[str, list[int]] = {}
            for slot in range(len(self._tags)):
                for tag in {t.casefold() for t in self.tags_of(slot)}:
                    index.setdefault(tag, []).append(slot)
            self._tag_slots = index
        return self._tag_slots

    def neighbours(self, slots: np.ndarray, window: int) -> tuple[np.ndarray, np.ndarray]:
        """The entries written just before and after each of ``slots`` in its folder: up to
        ``window`` on each side, in the order entries were first written (their row ids).

        Returns ``(owner, neighbour)``: parallel arrays, ``owner`` the position in ``slots``
        whose neighbour ``neighbour`` (a slot) is; each owner's before its after, nearest last
        and first. The live slots sorted by folder, then writing order, are kept up to date
        by each add and remove (an insertion, not a sort), so a search never sorts the root.
        """
        keys, order = self._sequence_of_writing()
        slots = np.asarray(slots, dtype=np.int64)
        if not len(keys) or not len(slots) or window <= 0:
            return np.zeros(0, dtype=np.int64), _EMPTY_SLOTS
        own = self._written[slots]
        offsets = np.array([*range(-window, 0), *range(1, window + 1)], dtype=np.int64)
        around = keys.searchsorted(own)[:, None] + offsets[None, :]
        inside = (around >= 0) & (around < len(keys))
        around[~inside] = 0
        inside &= (keys[around] >> _ROW_BITS) == (own >> _ROW_BITS)[:, None]  # the same folder
        owner, _ = inside.nonzero()  # row-major: each owner's neighbours in the order of ``offsets``
        return owner, order[around[inside]]

    def _sequence_of_writing(self) -> tuple[np.ndarray, np.ndarray]:
        """(sorted `_written_key` values, their slots) of the live entries."""
        if self._sequence is None:
            n = len(self.paths)
            live = np.flatnonzero(self._alive[:n])
            order = live[np.argsort(self._written[live], kind="stable")].astype(np.int32)
            self._sequence = self._written[order], order
        return self._sequence

    def holding(self, terms: Iterable[str], slots: np.ndarray) -> dict[str, np.ndarray]:
        """Per term (a Porter stem), whether each of ``slots`` contains it, anywhere in the entry.

        A search asks this of a hundred candidates and of their neighbours for each of its words:
        its terms' postings are marked once in a bitmap (a bit per term, a byte per slot and eight
        terms), so each ask is one gather and one unpacking, whatever the postings' lengths.
        """
        terms = list(terms)
        slots = np.asarray(slots, dtype=np.int64)
        if not terms:
            return {}
        query = self._postings(terms)
        count = len(self.paths)
        if len(slots) and int(slots.max()) >= count:
            raise ValueError(f"not a slot of this index: {int(slots.max())}")
        if query.bits is None:
            query.bits = np.zeros(((len(query.slots) + 7) // 8, count), dtype=np.uint8)
            for place, posting in enumerate(query.slots):
                row = query.bits[place >> 3]  # (a row, then the posting: 2-D indexing took a slower path)
                row[posting] |= np.uint8(1 << (place & 7))
        held = np.unpackbits(query.bits[:, slots], axis=0, bitorder="little").view(bool)
        return {term: held[query.place[term]] for term in terms}
