"""EpisodeRecord: the agent closes an episode itself (name, outcome, summary, tags)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memdir.core.errors import InputValidationError
from memdir.episodes.heuristics import message_importance
from memdir.episodes.model import OUTCOMES, Episode, Message
from memdir.episodes.store import OUTCOME_ICONS, episode_path, metadata, render
from memdir.tools.params import coerce_str_list

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.tools.session import Session

RECORDED_MIN_IMPORTANCE = 0.6  # the agent chose to record it: worth more than small talk
SETBACK_MIN_IMPORTANCE = 0.7  # failures and blockers are the lessons worth surfacing again
AGENT_SESSION = "agent"


CHOICES = {"outcome": OUTCOMES}
"""Parameters with a fixed set of values: the server lists them in the tool's input schema."""


def episode_record(
    memory: Memory,
    session: Session | None,
    name: str,
    outcome: str,
    summary: str,
    tags: list[str] | str | None = None,
    session_id: str | None = None,
    *,
    now: datetime | None = None,
) -> str:
    """Record the task you just finished, failed or paused as an episode, so later sessions can find it.

    Args:
        name: a short task name.
        outcome: how it ended.
        summary: what was asked, what you did or found, how it ended (at most 250 words).
        tags: file names, repos, error types, commands.
        session_id: default: this session.

    Returns:
        ``Recorded episode memory://experience/episodes/… "Name" (✅ success, importance 0.70).``
    """
    name = " ".join((name or "").split())
    if not name:
        raise InputValidationError("name is required.", 'Give the task a short name, e.g. "Fix flaky upload test".')
    if outcome not in OUTCOMES:
        raise InputValidationError(
            f"outcome must be one of {', '.join(OUTCOMES)}; got {outcome!r}.",
            "Use success (done), failure (gave up or it did not work), blocked (waiting on something) or ongoing.",
        )
    summary = (summary or "").strip()
    if not summary:
        raise InputValidationError("summary is required.", "Say what was asked, what you did or found, and how it ended.")
    limit = memory.settings.limits.word_limit
    if len(summary.split()) > limit:
        raise InputValidationError(
            f"summary exceeds the {limit}-word limit ({len(summary.split())} words).",
            "Keep the summary to the request, the key finding or fix, and the result.",
        )
    tag_list = coerce_str_list(tags, "tags")
    moment = now or datetime.now(UTC)
    owner = session_id or (session.session_id if session is not None else AGENT_SESSION)
    importance = max(RECORDED_MIN_IMPORTANCE, message_importance(Message(role="assistant", text=summary)))
    if outcome in ("failure", "blocked"):
        importance = max(importance, SETBACK_MIN_IMPORTANCE)
    episode = Episode(
        session_id=owner, name=name, tags=tag_list, outcome=outcome,
        importance=importance, started=moment, ended=moment, summary=" ".join(summary.split()), source="agent",
    )
    path = episode_path(episode)
    data: dict[str, Any] = metadata(episode)
    memory.write(path, render(episode, limit * 2), title=name, metadata=data)
    icon = OUTCOME_ICONS[outcome]
    return f'Recorded episode memory://{path} "{name}" ({icon} {outcome}, importance {importance:.2f}).'


__all__ = ["CHOICES", "episode_record"]
