"""EpisodeList: recent episodes, filtered by outcome, tag and time."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memdir.core.errors import InputValidationError
from memdir.core.identity import view_filter
from memdir.episodes.model import OUTCOMES
from memdir.episodes.store import OUTCOME_ICONS, list_episodes, parse_since
from memdir.tools.formatting import plural

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.tools.session import Session

MAX_LIMIT = 200


CHOICES = {"outcome": OUTCOMES}
"""Parameters with a fixed set of values: the server lists them in the tool's input schema."""


def episode_list(
    memory: Memory,
    session: Session | None,
    outcome: str | None = None,
    tag: str | None = None,
    since: str | None = None,
    limit: int = 20,
    *,
    now: datetime | None = None,
) -> str:
    """List past episodes (tasks of earlier sessions) in your role's view, most recent first; read one with MemoryRead.

    Args:
        outcome: only episodes that ended so.
        tag: only with this tag, e.g. ``pytest`` or a file name.
        since: an ISO date, ``7d``, ``12h``, ``today`` or ``yesterday``.
        limit: at most this many (default 20).

    Returns:
        ``Episodes (N, most recent first):`` then per episode a line
        ``- DATE ICON outcome · "Name" · importance X · tags: …`` and its ``memory://`` path.
    """
    if outcome is not None and outcome not in OUTCOMES:
        raise InputValidationError(
            f"outcome must be one of {', '.join(OUTCOMES)}; got {outcome!r}.",
            "Leave outcome out to list every episode.",
        )
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InputValidationError(f"limit must be a whole number from 1 to {MAX_LIMIT}; got {limit!r}.",
                                   "Use e.g. limit=20.")
    moment = now or datetime.now(UTC)
    cutoff = parse_since(since, moment) if since else None
    episodes = list_episodes(memory, outcome=outcome, tag=tag or None, since=cutoff, limit=limit,
                             view=view_filter(memory.actor, False))
    filters = ", ".join(f"{key}={value}" for key, value in (("outcome", outcome), ("tag", tag), ("since", since)) if value)
    if not episodes:
        suffix = f" matching {filters}" if filters else ""
        return (f"No episodes found{suffix}. Episodes come from ingested transcripts (`memdir ingest`, the "
                "SessionEnd hook) and from EpisodeRecord.")
    lines = [f"Episodes ({plural(len(episodes), 'episode')}, most recent first{'; ' + filters if filters else ''}):"]
    for episode in episodes:
        when = episode.when.astimezone(UTC).strftime("%Y-%m-%d %H:%M") if episode.when else "undated"
        line = (f"- {when} {OUTCOME_ICONS.get(episode.outcome, '')} {episode.outcome} · \"{episode.name}\" · "
                f"importance {episode.importance:.2f}")
        if episode.tags:
            line += f" · tags: {', '.join(episode.tags[:8])}"
        lines += [line, f"  memory://{episode.path}"]
    return "\n".join(lines)


__all__ = ["CHOICES", "episode_list"]
