"""The episode data model: messages read from a transcript, and the episodes cut from them.

An *episode* is a stretch of one session about one task ("fix the flaky pytest run",
"plan the trip to Paris"). It carries what the episode design asks of a page:
session id, a name, tags, an outcome, an importance (the max over its messages), start
and end times, a token count and a short summary. `memdir.episodes.store` turns it into
a normal ``experience/`` memory entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from memdir.core.units import estimate_tokens

Outcome = Literal["success", "failure", "blocked", "ongoing"]
OUTCOMES: tuple[Outcome, ...] = ("success", "failure", "blocked", "ongoing")


@dataclass
class Message:
    """One message of a conversation, flattened to text.

    Attributes:
        role: ``user``, ``assistant``, ``tool`` (a tool result) or ``system``; plain JSON
            transcripts may use any speaker role (LoCoMo's names, for instance).
        text: the text (a tool call is rendered as ``ToolName: input``).
        timestamp: when it was said (timezone-aware), or None when the transcript has none.
        kind: ``text``, ``tool_use`` or ``tool_result``.
        tool: the tool's name for ``tool_use`` messages.
        tool_input: the tool call's arguments for ``tool_use`` messages.
        is_error: a tool result flagged as an error.
        uid: the transcript's id of the message (Claude Code ``uuid``, LoCoMo ``dia_id``).
        speaker: a display name when the transcript has one.
        importance: 0-1, set by `memdir.episodes.heuristics.message_importance`.
    """

    role: str
    text: str
    timestamp: datetime | None = None
    kind: str = "text"
    tool: str | None = None
    tool_input: dict | None = None
    is_error: bool = False
    uid: str | None = None
    speaker: str | None = None
    importance: float = 0.0

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)

    @property
    def conversational(self) -> bool:
        """True for what people said (not tool calls or tool output): topic windows use these."""
        return self.kind == "text" and self.role not in ("tool", "system")

    @property
    def who(self) -> str:
        return self.speaker or self.role


@dataclass
class Episode:
    """A stretch of one session about one task.

    Attributes:
        session_id: the session (transcript) it came from.
        name: a short human-readable task name.
        messages: the messages, in order.
        tags: extracted keywords (files, repos, error types, commands, project).
        outcome: success | failure | blocked | ongoing.
        importance: the max importance over its messages (0-1).
        started / ended: first and last message times (None when the transcript has none).
        summary: a short readable summary (the first paragraph of the stored entry).
        boundary: why the episode began: ``start``, ``pause``, ``marker``, ``topic`` or ``agent``.
        project: the project (repository or working-directory name), when known.
        index: position of its first message in the session (identifies undated episodes).
        source: where it came from (``transcript`` or ``agent``).
        transcript: the transcript file, for drill-down.
        recorded: the entry the agent's own EpisodeRecord call wrote for this episode, if any.
    """

    session_id: str
    name: str = ""
    messages: list[Message] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    outcome: Outcome = "ongoing"
    importance: float = 0.0
    started: datetime | None = None
    ended: datetime | None = None
    summary: str = ""
    boundary: str = "start"
    project: str | None = None
    index: int = 0
    source: str = "transcript"
    transcript: str | None = None
    recorded: str | None = None

    @property
    def tokens(self) -> int:
        return sum(message.tokens for message in self.messages)

    @classmethod
    def from_messages(cls, session_id: str, messages: list[Message], *, boundary: str = "start", index: int = 0,
                      project: str | None = None, transcript: str | None = None) -> Episode:
        """An episode over ``messages`` with times and importance filled in (name, tags, outcome come later)."""
        times = [message.timestamp for message in messages if message.timestamp is not None]
        return cls(
            session_id=session_id,
            messages=list(messages),
            importance=max((message.importance for message in messages), default=0.0),
            started=min(times) if times else None,
            ended=max(times) if times else None,
            boundary=boundary,
            index=index,
            project=project,
            transcript=transcript,
        )


__all__ = ["OUTCOMES", "Episode", "Message", "Outcome"]
