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

import numpy as np

from memdir.core.settings import Settings
from memdir.threads.context import fragment, semantic, virtual
from memdir.threads.context.base import Unit, Window, units_of
from memdir.threads.model import Chunk, ThreadState

Vectors = Callable[[list[str]], np.ndarray]


class UnitCache:
    """The units of a chunk sequence that mostly grows: only the new chunks are built when it just grew."""

    def __init__(self) -> None:
        self.chunks: Sequence[Chunk] = ()
        self.units: list[Unit] = []

    def update(self, chunks: Sequence[Chunk]) -> tuple[list[Unit], bool]:
        """The units added since the last call, and whether the units were rebuilt instead (then all are new)."""
        old = self.chunks
        added = chunks[len(old):]
        grows = len(chunks) >= len(old) and all(a is b for a, b in zip(old, chunks))
        self.chunks = chunks
        if grows and not any(chunk.call_id for chunk in added):
            fresh = units_of(added, len(self.units))
            self.units = self.units + fresh
            return fresh, False
        self.units = units_of(chunks)  # something changed in place, or a tool result joins an earlier call
        return self.units, True


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

    def units(self, state: ThreadState) -> list[Unit]:
        """The units of the thread as compaction left it."""
        if state is not self._state:
            fresh, rebuilt = self._view.update(state.chunks)
            draws = [fragment.draw(self.thread, unit) for unit in fresh]
            self._draws = np.array(draws) if rebuilt else np.concatenate([self._draws, draws])
            self._state = state
        return self._view.units

    def turns(self, state: ThreadState) -> list[Unit]:
        """The units of every original turn (summaries unfolded)."""
        if state is not self._timeline_of:
            self._timeline.update(state.timeline() if state.archive else state.chunks)
            self._timeline_of = state
        return self._timeline.units

    def window(self, state: ThreadState, budget_tokens: int, query: str | None = None,
               vectors: Vectors | None = None) -> Window:
        """The window of ``state`` by its strategy; ``vectors`` embeds texts for the semantic one (None: keywords)."""
        with self._lock:
            if state.strategy == "semantic":
                units = self.turns(state)
            else:
                units = self.units(state)
                draws = self._draws
        if state.strategy == "fragment":
            return fragment.select(self.thread, units, draws, budget_tokens, self.settings)
        if state.strategy == "semantic":
            return semantic.select(units, budget_tokens, self.settings, query, vectors)
        return virtual.select(state, units, budget_tokens, self.settings)


__all__ = ["ContextBuilder", "UnitCache", "Window"]
