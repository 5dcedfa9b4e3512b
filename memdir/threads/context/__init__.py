"""Context strategies: how a thread's state becomes a window of at most ``budget_tokens``.

* `memdir.threads.context.virtual` — recent messages by lane, important ones pinned, older ones in pages.
* `memdir.threads.context.fragment` — recent messages plus an age-weighted, thread-seeded sample of older ones.
* `memdir.threads.context.semantic` — recent messages plus the older ones nearest the query (real embeddings).

`ContextBuilder` keeps, for one thread, what the strategies derive from a state (its units,
the fragment draws), so asking again for an unchanged thread costs only the selection.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from memdir.core.settings import Settings
from memdir.threads.context import fragment, semantic, virtual
from memdir.threads.context.base import Unit, Window, units_of
from memdir.threads.model import ThreadState

Vectors = Callable[[list[str]], np.ndarray]


class ContextBuilder:
    """Windows of one thread, with its units cached per state."""

    def __init__(self, thread: str, settings: Settings) -> None:
        self.thread, self.settings = thread, settings
        self._state: ThreadState | None = None
        self._units: list[Unit] = []
        self._draws = np.zeros(0)

    def units(self, state: ThreadState) -> list[Unit]:
        """The state's units; only the new ones are built when the state just added chunks (or changed none)."""
        if state is self._state:
            return self._units
        old = self._state.chunks if self._state is not None else ()
        added = state.chunks[len(old):]
        grows = len(state.chunks) >= len(old) and all(a is b for a, b in zip(old, state.chunks))
        if grows and not any(chunk.call_id for chunk in added):
            fresh = [Unit.of(len(self._units) + i, [chunk]) for i, chunk in enumerate(added)]
            self._units = self._units + fresh
            self._draws = np.concatenate([self._draws, [fragment.draw(self.thread, unit) for unit in fresh]])
        else:  # something changed in place, or a tool result joins an earlier call: rebuild
            self._units = units_of(state)
            self._draws = np.array([fragment.draw(self.thread, unit) for unit in self._units])
        self._state = state
        return self._units

    def window(self, state: ThreadState, budget_tokens: int, query: str | None = None,
               vectors: Vectors | None = None) -> Window:
        """The window of ``state`` by its strategy; ``vectors`` embeds texts for the semantic one (None: keywords)."""
        units = self.units(state)
        if state.strategy == "fragment":
            return fragment.select(self.thread, units, self._draws, budget_tokens, self.settings)
        if state.strategy == "semantic":
            return semantic.select(units, budget_tokens, self.settings, query, vectors)
        return virtual.select(state, units, budget_tokens, self.settings)


__all__ = ["ContextBuilder", "Window"]
