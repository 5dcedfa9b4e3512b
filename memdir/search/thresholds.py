"""The relevance a reminder's hit needs: SwarmMemory's adaptive threshold, held above a floor."""

from __future__ import annotations

from memdir.core.sections import DiscoverySettings


def threshold_for(discovery: DiscoverySettings, query: str) -> float:
    """Short queries (fewer than ``adaptive_word_cutoff`` words) get the lower threshold: they carry less to match."""
    if len(query.split()) < discovery.adaptive_word_cutoff:
        return discovery.threshold_short
    return discovery.threshold


def relevance_needed(discovery: DiscoverySettings, message: str) -> float:
    """The relevance a discovery hit needs for ``message``: the adaptive threshold, never below the floor."""
    return max(threshold_for(discovery, message), discovery.min_score)
