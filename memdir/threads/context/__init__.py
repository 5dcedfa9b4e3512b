"""Context strategies: how a thread's state becomes a window of at most ``budget_tokens``.

* `memdir.threads.context.virtual` — recent messages by lane, important ones pinned, older ones in pages.
* `memdir.threads.context.fragment` — recent messages plus an age-weighted, thread-seeded sample of older ones.
* `memdir.threads.context.semantic` — recent messages plus the older ones nearest the query (real embeddings).

Virtual and fragment work on the thread as compaction left it (summaries in place of the
turns they replaced); semantic works on every original turn, so compaction never hides a
turn from a query. `ContextBuilder` keeps, for one thread, what the strategies derive from
a state (its units, the fragment draws), so asking again for an unchanged thread costs
only the selection.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from memdir.core.settings import Settings
from memdir.threads.context import fragment, semantic, virtual
from memdir.threads.context.base import Unit, Window, units_of
from memdir.threads.model import Chunk, ThreadState

Query = Callable[[str], np.ndarray]
TOOL_LOOKBACK = 16
"""How far back `newest_turn` looks for the tool call a result answers (further back: the window embeds it later)."""


class Vectors(Protocol):
    """Unit vectors of ``texts`` (a cache's); ``ahead``: texts to embed in the same batch if any must be."""

    def __call__(self, texts: Sequence[str], ahead: Sequence[str] = ..., /) -> np.ndarray: ...


def _extends(chunks: Sequence[Chunk], before: Sequence[Chunk]) -> bool:
    """Whether ``chunks`` are ``before`` (the very objects) with more after them."""
    return len(chunks) >= len(before) and all(a is b for a, b in zip(before, chunks))


def newest_turn(state: ThreadState) -> str | None:
    """The text the semantic strategy ranks for the thread's newest message (with its tool call, when it is a
    result), as the timeline's units render it; None when the newest chunk is a summary or there is none."""
    if not state.chunks or state.chunks[-1].is_summary:
        return None
    last = state.chunks[-1]
    group = [chunk for chunk in state.chunks[-TOOL_LOOKBACK:] if chunk.call_id == last.call_id] if last.call_id else [last]
    return Unit.of(0, group).text


class UnitCache:
    """The units of a chunk sequence that mostly grows: when it just grew, only the new chunks' units are built, and
    when a new chunk is the result of a call an older unit holds, the units from that one on."""

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []
        self.units: list[Unit] = []
        self._calls: dict[str, int] = {}  # call id -> the unit that holds the call

    def update(self, chunks: Sequence[Chunk]) -> int:
        """Bring the units up to ``chunks``; the index of the first unit that changed (those after it are new)."""
        if _extends(chunks, self.chunks):
            return self.extend(chunks[len(self.chunks):])
        self.chunks = list(chunks)  # something changed in place
        return self._build(0, self.chunks)

    def extend(self, added: Sequence[Chunk]) -> int:
        """Add chunks that follow the known ones (the caller knows they do); the first unit that changed."""
        start = min((self._calls.get(chunk.call_id, len(self.units)) for chunk in added if chunk.call_id),
                    default=len(self.units))
        known = len(self.chunks)
        self.chunks.extend(added)
        if start == len(self.units):
            return self._build(start, list(added))
        # the chunks of the units from ``start`` on: from the first one's place, those the units hold, in thread order
        first = self.units[start].chunks[0]
        place = next(i for i in range(known - 1, -1, -1) if self.chunks[i] is first)
        members = {id(chunk) for unit in self.units[start:] for chunk in unit.chunks}
        return self._build(start, [chunk for chunk in self.chunks[place:known] if id(chunk) in members] + list(added))

    def _build(self, start: int, chunks: list[Chunk]) -> int:
        """Units from ``start`` on, of ``chunks`` (the chunks of those units, in thread order)."""
        fresh = units_of(chunks, start)
        self.units = self.units[:start] + fresh  # a new list: a reader may still hold the old one
        if not start:
            self._calls = {}
        self._calls.update((unit.chunks[0].call_id, unit.index) for unit in fresh if unit.chunks[0].call_id)
        return start


class ContextBuilder:
    """Windows of one thread, with its units cached per state (safe to call from several threads)."""

    def __init__(self, thread: str, settings: Settings) -> None:
        self.thread, self.settings = thread, settings
        self._lock = threading.Lock()
        self._state: ThreadState | None = None
        self._view = UnitCache()
        self._draws = np.zeros(0)
        self._timeline_of: ThreadState | None = None
        self._timeline = UnitCache()
        self._turn_vectors = np.zeros((0, 0), dtype=np.float32)  # rows: the timeline's units, as far as embedded
        self._embedded = 0

    def _vectors_of_turns(self, units: list[Unit], count: int, vectors: Vectors) -> np.ndarray:
        """The vectors of the first ``count`` of ``units`` (the timeline's), embedding only units not embedded before
        (the later ones join the batch when something must be embedded, never waited for: they are the recent turns,
        shown without ranking); the buffer grows by doubling, so a live thread's append costs one new row, not a copy
        of them all."""
        with self._lock:
            start = self._embedded
            if start < count:
                ahead = [unit.text for unit in units[count:]]
                fresh = vectors([unit.text for unit in units[start:count]], ahead)
                if start and fresh.shape[1] != self._turn_vectors.shape[1]:  # another model: embed them all again
                    start, fresh = 0, vectors([unit.text for unit in units[:count]], ahead)
                if len(self._turn_vectors) < count or self._turn_vectors.shape[1] != fresh.shape[1]:
                    grown = np.zeros((max(count, 2 * len(self._turn_vectors)), fresh.shape[1]), dtype=np.float32)
                    if start:
                        grown[:start] = self._turn_vectors[:start]
                    self._turn_vectors = grown
                self._turn_vectors[start:count] = fresh
                self._embedded = count
            return self._turn_vectors[:count]

    def units(self, state: ThreadState) -> list[Unit]:
        """The units of the thread as compaction left it."""
        if state is not self._state:
            start = self._view.update(state.chunks)
            draws = [fragment.draw(self.thread, unit) for unit in self._view.units[start:]]
            self._draws = np.concatenate([self._draws[:start], draws])
            self._state = state
        return self._view.units

    def turns(self, state: ThreadState) -> list[Unit]:
        """The units of every original turn (summaries unfolded)."""
        if state is not self._timeline_of:
            before = self._timeline_of
            if before is not None and state.archive is before.archive and _extends(state.chunks, before.chunks):
                added = state.chunks[len(before.chunks):]  # no compaction since: the new turns follow the old ones
                start = self._timeline.extend([turn for chunk in added for turn in state.originals(chunk)])
            elif (grown := self._grown_timeline(before, state)) is not None:
                start = self._timeline.extend(grown)
            else:
                start = self._timeline.update(state.timeline() if state.archive else state.chunks)
            self._embedded = min(self._embedded, start)
            self._timeline_of = state
        return self._timeline.units

    def _grown_timeline(self, before: ThreadState | None, state: ThreadState) -> list[Chunk] | None:
        """The turns appended between ``before`` and ``state`` when ``state`` grew from it (compactions in between
        only fold turns, never drop them); None when the timeline must be built again (the log was replaced, or a
        turn has an id that is no event number)."""
        known = self._timeline.chunks
        if before is None or not known or state.seq < before.seq or state.chunk(known[-1].id) is not known[-1]:
            return None
        grown = state.turns_after(before.seq)
        return grown if len(known) + len(grown) == state.turns else None

    def window(self, state: ThreadState, budget_tokens: int, query: str | None = None,
               vectors: Vectors | None = None, embed_query: Query | None = None) -> Window:
        """The window of ``state`` by its strategy; ``vectors`` embeds texts for the semantic one (None: keywords),
        ``embed_query`` its query (default: ``vectors``)."""
        with self._lock:
            if state.strategy == "semantic":
                units = self.turns(state)
            else:
                units = self.units(state)
                draws = self._draws
        if state.strategy == "fragment":
            window = fragment.select(self.thread, units, draws, budget_tokens, self.settings)
        elif state.strategy != "semantic":
            window = virtual.select(state, units, budget_tokens, self.settings)
        elif vectors is None:
            window = semantic.select(units, budget_tokens, self.settings, query, None)
        else:
            window = semantic.select(units, budget_tokens, self.settings, query, vectors,
                                     lambda count: self._vectors_of_turns(units, count, vectors), embed_query)
        window.total = state.turns
        return window


__all__ = ["ContextBuilder", "UnitCache", "Vectors", "Window", "newest_turn"]
