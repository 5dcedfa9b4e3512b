"""MemoryDefrag: analyse the memory's health and optimise it (duplicates, links, stubs, compaction)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memdir.optimization.options import ACTIONS, OPTION_SPECS

if TYPE_CHECKING:
    from memdir.memory import Memory

#: Every option the tool accepts, with its JSON type, for the server's parameter schema.
PARAMETERS: dict[str, str] = {
    name: {"fraction": "number", "number": "number", "integer": "integer", "choice": "string", "flag": "boolean"}[spec.kind]
    for name, spec in OPTION_SPECS.items()
}


def memory_defrag(memory: Memory, action: str, **options: Any) -> str:
    """Analyze memory health and optimize it: find duplicates, weak entries and related ones; merge, link, clean up.

    Read-only actions (safe any time):
    - ``analyze``: health report — coverage of metadata, tags, links and embeddings, quality, health score 0-100.
    - ``find_duplicates`` (similarity_threshold=0.85): pairs whose word overlap or meaning is at least that similar.
    - ``find_low_quality`` (min_quality_score=50, confidence_filter=high|medium|low|none): entries with thin
      metadata, with what each is missing.
    - ``find_archival_candidates`` (age_days=90, max_hits=0): old entries nobody reads.
    - ``find_related`` (min_similarity=0.60, max_similarity=0.85): related but not duplicate pairs, and whether
      they are linked yet.

    Active actions change memory, but ONLY with ``dry_run: false``; by default (dry_run true) they show what
    they would do. Always preview first, then repeat the call with ``dry_run: false``:
    - ``link_related`` (min_similarity, max_similarity): add ``related`` links between related entries, both ways.
    - ``merge_duplicates`` (similarity_threshold=0.85, merge_strategy=keep_newer|keep_larger|combine): keep one
      entry of each duplicate pair; the other becomes a stub that redirects reads to the kept one.
    - ``cleanup_stubs`` (age_days=30, max_hits=3): delete old, rarely used redirect stubs.
    - ``compact`` (min_quality_score=20, min_age_days=30, max_hits=0): delete entries that are low quality AND
      old AND unread.
    - ``full``: merge duplicates, clean up stubs and compact in one go, reporting the health score before and after.

    Every live change is journaled; a person can revert the last live run with ``memdir defrag --undo``.

    Args:
        action: one of the actions above.
        options: the action's options as listed (``limit`` caps how many items the report lists, default 50).

    Returns:
        A markdown report of what was found, or what was (or would be) changed.
    """
    # Loads with the first run, not the server's start.
    from memdir.optimization.defragmenter import Defragmenter

    return Defragmenter(memory).run(str(action).strip(), **options).markdown


__all__ = ["ACTIONS", "PARAMETERS", "memory_defrag"]
