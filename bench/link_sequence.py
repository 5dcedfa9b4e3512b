"""Links along a sequence: each entry of a conversation (turns, episodes of one session) linked to
the one before it, so that ranking's graph expansion can bring in what came just before or after a hit.

The links are *system* ``references`` links of strength ``sequence_link_strength``: memdir made them,
so link decay may weaken the ones nobody follows, and a person's own links are never touched.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from memdir.core.links import RELATED_KIND

if TYPE_CHECKING:
    from memdir.memory import Memory


def link_sequence(memory: Memory, paths: Iterable[str], strength: float | None = None) -> int:
    """Link each of ``paths`` (existing entries, in order) to the one before it; returns the links made."""
    value = memory.settings.search.sequence_link_strength if strength is None else strength
    made = 0
    previous: str | None = None
    for path in paths:
        if previous is not None:
            memory.link(path, previous, RELATED_KIND, value, origin="system")
            made += 1
        previous = path
    return made


__all__ = ["link_sequence"]
