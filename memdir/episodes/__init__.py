"""Episodic memory (seed 001, SemanticMemory): conversations cut into task episodes, stored as entries.

    transcript ──ingest──▶ messages ──segment──▶ episodes ──heuristics──▶ described ──store──▶ experience/episodes/…
                                                                                     recall ◀── search / list

* `memdir.episodes.model` — `Message`, `Episode`.
* `memdir.episodes.segment` — boundaries: pauses, markers, topic shift.
* `memdir.episodes.heuristics` — importance, outcome, tags, name, summary (deterministic).
* `memdir.episodes.store` — the entry layout, idempotent save, listing.
* `memdir.episodes.ingest` — Claude Code JSONL and plain JSON transcripts.
* `memdir.episodes.recall` — discovery ranking (boost, decay, at most N) and the session-start reminder.
* `memdir.episodes.sampling` — an optional better name+summary from the client's model.
"""

from memdir.episodes.ingest import IngestReport, ingest, project_name, read_transcript
from memdir.episodes.model import OUTCOMES, Episode, Message, Outcome
from memdir.episodes.recall import RankedEpisode, discover_episodes, rank_episodes, where_we_left_off
from memdir.episodes.segment import EPISODE_MARKER, SegmentConfig, segment
from memdir.episodes.store import EPISODES_PREFIX, StoredEpisode, list_episodes, save

__all__ = [
    "EPISODES_PREFIX",
    "EPISODE_MARKER",
    "OUTCOMES",
    "Episode",
    "IngestReport",
    "Message",
    "Outcome",
    "RankedEpisode",
    "SegmentConfig",
    "StoredEpisode",
    "discover_episodes",
    "ingest",
    "list_episodes",
    "project_name",
    "rank_episodes",
    "read_transcript",
    "save",
    "segment",
    "where_we_left_off",
]
