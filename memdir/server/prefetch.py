"""Prefetching at session start.

`warm` fills the memory's entry cache (`memdir.storage.entry_cache`) with what an agent of
this role is likely to read first: its view's most recently used entries (last read, else
last changed; ``prefetch_recent``) and its most important ones (importance at least
``prefetch_min_importance``; ``prefetch_important``). An empty store prefetches nothing;
prefetching an entry twice only refreshes its place. Reads (MemoryRead) are then served from
the cache while the entry's files are unchanged, and the cache counts hits and misses.

`warm_for_phase` is ``on_phase_transition``: when the work changes phase — a skill
is loaded (LoadSkill), and with it a new toolset — the entries the new phase is likely to
read (a search of the view for what the skill is about, ``prefetch_phase`` of them) are
prefetched too.

The other change a running server sees, a client session in another role, warms with `warm`
in that role (`memdir.server.role_warming`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from memdir.core.identity import Labels, view_filter

if TYPE_CHECKING:
    from memdir.memory import Memory

log = logging.getLogger(__name__)

CANDIDATES_PER_SLOT = 8
"""Candidates looked at per prefetch slot, so that a role's view still fills its slots."""


def session_paths(memory: Memory) -> list[str]:
    """The entries to prefetch for ``memory``'s actor: recent ones first, then important ones, no repeats."""
    settings = memory.settings
    view = view_filter(memory.actor, False)
    chosen: list[str] = []
    for limit, candidates in (
        (settings.discovery.prefetch_recent, memory.index.recently_used(settings.discovery.prefetch_recent * CANDIDATES_PER_SLOT)),
        (settings.discovery.prefetch_important, memory.index.most_important(
            settings.discovery.prefetch_min_importance, settings.discovery.prefetch_important * CANDIDATES_PER_SLOT)),
    ):
        visible = [path for path in candidates if path not in chosen]
        if view is not None:
            labels = memory.index.labels(visible)
            visible = [path for path in visible if view.sees(labels.get(path, Labels()))]
        chosen.extend(visible[:limit])
    return chosen


def warm(memory: Memory) -> int:
    """Prefetch `session_paths` into the memory's cache; how many entries were cached."""
    if memory.cache is None:
        return 0
    paths = session_paths(memory)
    done = memory.prefetch(paths)
    log.info("prefetched %d of %d entries for %s", done, len(paths), memory.actor.label)
    return done


def warm_for_phase(memory: Memory, about: str) -> int:
    """Prefetch the ``prefetch_phase`` entries of the actor's view that best match ``about`` (what
    the new phase is about: a loaded skill's title and description); how many were cached."""
    if memory.cache is None or not about.strip() or memory.settings.discovery.prefetch_phase <= 0:
        return 0
    results = memory.search(about, top_k=memory.settings.discovery.prefetch_phase, view=view_filter(memory.actor, False))
    done = memory.prefetch(result.path for result in results)
    log.info("prefetched %d entries for a new phase of %s", done, memory.actor.label)
    return done


__all__ = ["session_paths", "warm", "warm_for_phase"]
