"""Recall of episodes: the per-message ranking (discovery) and the session-start reminder.

Ranking:

* **importance boost** — an episode whose importance is at least
  ``episode_importance_threshold`` (0.7) gets ``episode_importance_boost`` (0.1) added
  to its relevance;
* **recency decay** — the result is multiplied by
  ``floor + (1 - floor) * 0.5 ** (age_days / half_life)`` (``episode_half_life_days`` 30,
  ``episode_recency_floor`` 0.5), so an older episode needs a higher relevance to pass
  the same threshold (at most twice as high: "how I fixed this last quarter" can still
  surface when it matches well);
* **at most N** (``episode_max_injected``, 3) are injected, of those whose relevance
  (decayed, not boosted) reaches the discovery threshold (SwarmMemory's adaptive one, never
  below ``discovery_min_score``): the boost orders the relevant, it lets nothing in;
* a message of too few words ("thanks!"; discovery passes them as ``must_name``) gets only
  episodes whose name or tags name one of them.

``relevance`` is the hybrid search's absolute relevance of the episode's entry for the
message (`memdir.search.hybrid.SearchResult.relevance`).

The session-start reminder ("where we left off") lists the most recent episodes of the
project, newest first, until ``episode_session_start_budget`` tokens are used.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memdir.core.entry import EPISODES_PREFIX
from memdir.core.errors import EntryNotFoundError
from memdir.core.keywords import names_any
from memdir.core.settings import Settings
from memdir.core.units import estimate_tokens
from memdir.episodes.heuristics import clip_words
from memdir.episodes.store import OUTCOME_ICONS, StoredEpisode, list_episodes, read_episode
from memdir.search.thresholds import relevance_needed

if TYPE_CHECKING:
    from memdir.memory import Memory

CANDIDATES_PER_SLOT = 5  # search this many candidates per injected episode: decay and boost re-order them


@dataclass(frozen=True, slots=True)
class RankedEpisode:
    """An episode with its search relevance and its score after boost and decay."""

    episode: StoredEpisode
    relevance: float
    score: float
    age_days: float
    boosted: bool
    keyword_only: bool = False  # found without the model: its relevance is word overlap, not meaning


def age_in_days(episode: StoredEpisode, now: datetime) -> float:
    when = episode.when
    return max(0.0, (now - when).total_seconds() / 86400) if when else 0.0


def recency_factor(age_days: float, half_life_days: float, floor: float = 0.0) -> float:
    """``floor + (1 - floor) * 0.5 ** (age / half_life)``; 1 when the half-life is 0 or negative (no decay)."""
    if half_life_days <= 0:
        return 1.0
    floor = min(max(floor, 0.0), 1.0)
    return floor + (1.0 - floor) * 0.5 ** (max(age_days, 0.0) / half_life_days)


def adjusted_score(relevance: float, importance: float, age_days: float, settings: Settings) -> tuple[float, bool]:
    """(score, boosted): relevance plus the importance boost, times the recency factor."""
    boosted = importance >= settings.episodes.importance_threshold
    boost = settings.episodes.importance_boost if boosted else 0.0
    factor = recency_factor(age_days, settings.episodes.half_life_days, settings.episodes.recency_floor)
    return (relevance + boost) * factor, boosted


def rank(candidates: list[tuple[StoredEpisode, float]], settings: Settings, *, now: datetime | None = None,
         threshold: float = 0.0, limit: int | None = None) -> list[RankedEpisode]:
    """Rank (episode, relevance) pairs by adjusted score, at most ``limit``, of those whose relevance
    (with its recency decay, without the importance boost) reaches ``threshold``: the boost
    reorders what is relevant, it does not make an unrelated episode relevant."""
    now = now or datetime.now(UTC)
    ranked = []
    for episode, relevance in candidates:
        age = age_in_days(episode, now)
        score, boosted = adjusted_score(relevance, episode.importance, age, settings)
        decayed = relevance * recency_factor(age, settings.episodes.half_life_days, settings.episodes.recency_floor)
        if decayed >= threshold:
            ranked.append(RankedEpisode(episode, relevance, score, age, boosted))
    ranked.sort(key=lambda item: (-item.score, item.age_days, item.episode.path))
    return ranked[: settings.episodes.max_injected if limit is None else limit]


def rank_episodes(memory: Memory, query: str, *, settings: Settings | None = None, now: datetime | None = None,
                  threshold: float | None = None, limit: int | None = None,
                  must_name: Collection[str] | None = None) -> list[RankedEpisode]:
    """The episodes to inject for ``query``, best first (see the module docstring for the rules).

    Args:
        memory: the open memory root.
        query: the user's message.
        settings: limits (default: the memory's settings).
        now: the present (tests pin it).
        threshold: minimum adjusted score (default: the adaptive discovery threshold, floored).
        limit: at most this many (default ``episode_max_injected``).
        must_name: only episodes whose name or tags hold one of these keyword terms (Porter
            stems; discovery's rule for a message of too few words); None: no such rule.
    """
    settings = settings or memory.settings
    if not query or not query.strip():
        return []
    limit = settings.episodes.max_injected if limit is None else limit
    if not memory.list_page(None, 1, under=EPISODES_PREFIX).entries:
        return []  # no episode yet: no search (a vector search filtered to an empty folder can walk the whole graph)
    if threshold is None:
        threshold = relevance_needed(settings.discovery, query)
    results = memory.search(query, top_k=max(limit, 1) * CANDIDATES_PER_SLOT, path_prefix=EPISODES_PREFIX)
    if must_name is not None:
        results = [result for result in results if names_any(set(must_name), result.title, *result.tags)]
    candidates = []
    for result in results:
        try:
            candidates.append((read_episode(memory, result.path), float(result.relevance)))
        except EntryNotFoundError:
            continue
    ranked = rank(candidates, settings, now=now, threshold=threshold, limit=limit)
    if results and results[0].mode == "keyword":
        ranked = [replace(item, keyword_only=True) for item in ranked]
    return ranked


def _ago(age_days: float) -> str:
    hours = round(age_days * 24)
    if hours < 1:
        return "just now"
    if hours < 24:
        return f"{hours}h ago"
    days = round(age_days)
    return "yesterday" if days <= 1 else f"{days} days ago"


def episode_line(episode: StoredEpisode, now: datetime, *, summary_words: int = 30) -> str:
    """``- ✅ success · 2 days ago · "Name" — summary… (memory://path)``."""
    icon = OUTCOME_ICONS.get(episode.outcome, "")
    summary = clip_words(episode.summary, summary_words) if episode.summary else ""
    text = f'- {icon} {episode.outcome} · {_ago(age_in_days(episode, now))} · "{episode.name}"'
    if summary:
        text += f" — {summary}"
    return text + f" (memory://{episode.path})"


def episode_reminder(ranked: list[RankedEpisode], now: datetime | None = None) -> str:
    """The discovery block for episodes (empty string when there are none)."""
    if not ranked:
        return ""
    now = now or datetime.now(UTC)
    lines = ["<system-reminder>", f"🧭 Found {len(ranked)} past episode(s) that may help with this:", ""]
    for item in ranked:
        strength = "keyword match" if item.keyword_only else f"{round(item.score * 100)}% match"
        lines.append(episode_line(item.episode, now) + f" [{strength}]")
    lines += ["", 'Read one with `MemoryRead(file_path: "...")` for the details.', "</system-reminder>"]
    return "\n".join(lines)


def discover_episodes(memory: Memory, message: str, *, settings: Settings | None = None, now: datetime | None = None,
                      must_name: Collection[str] | None = None, threshold: float | None = None) -> str:
    """Per-message episode reminder for a user's message, or ``""`` when nothing qualifies."""
    ranked = rank_episodes(memory, message, settings=settings, now=now, must_name=must_name, threshold=threshold)
    return episode_reminder(ranked, now)


def where_we_left_off(memory: Memory, *, project: str | None = None, settings: Settings | None = None,
                      now: datetime | None = None, token_budget: int | None = None) -> str:
    """The session-start reminder: the project's most recent episodes within a token budget ("" when none).

    Args:
        memory: the open memory root.
        project: only episodes of this project (its ``project`` key, else a tag); None = all.
        settings: limits (default: the memory's settings).
        now: the present (tests pin it).
        token_budget: default ``episode_session_start_budget``.
    """
    settings = settings or memory.settings
    now = now or datetime.now(UTC)
    budget = settings.episodes.session_start_budget if token_budget is None else token_budget
    where = f" in {project}" if project else ""
    header = ["<system-reminder>", f"🧭 Where we left off{where} — the most recent episodes, newest first:"]
    # MemoryRead and MemoryGlob are offered in every mode (EpisodeList only to researchers)
    footer = [f'Read one with `MemoryRead(file_path: "...")`; list more with `MemoryGlob(pattern: "{EPISODES_PREFIX}**")`.',
              "</system-reminder>"]
    lines: list[str] = []
    used = estimate_tokens("\n".join(header + footer))
    for episode in list_episodes(memory, project=project, limit=max(1, budget // 20)):
        line = episode_line(episode, now)
        cost = estimate_tokens(line) + 1
        if used + cost > budget:
            line = episode_line(episode, now, summary_words=8)
            cost = estimate_tokens(line) + 1
            if used + cost > budget:
                break
        lines.append(line)
        used += cost
    if not lines:
        return ""
    return "\n".join([*header, *lines, *footer])


__all__ = [
    "RankedEpisode",
    "adjusted_score",
    "age_in_days",
    "discover_episodes",
    "episode_line",
    "episode_reminder",
    "rank",
    "rank_episodes",
    "recency_factor",
    "where_we_left_off",
]
