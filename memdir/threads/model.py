"""What a thread holds: chunks with a type, a retention class and an importance, and the state they form.

A *chunk* is one message, tool call or tool result (or a compacted summary of several).
Its type says where it came from (chunk types); its retention class says what
compaction may do with it; its importance (0-1) says what the virtual strategy keeps
verbatim. `ThreadState` is immutable: reducers build a new one for every event.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from memdir.core.errors import InputValidationError
from memdir.core.units import estimate_tokens

CHUNK_TYPES = ("system", "agent", "workflow", "delegation", "environment", "working-flow", "output")
WORKING_FLOW = "working-flow"
SUBTYPES = ("compacted", "user", "thinking", "response", "agent-action", "action-response")
"""Subtypes of working-flow chunks (the conversation itself)."""
RETENTIONS = ("critical", "compressible", "batch-compressible", "disposable", "ephemeral")
COMPRESSIBLE = ("compressible", "batch-compressible")
ROLES = ("user", "assistant", "system", "tool")
STRATEGIES = ("virtual", "fragment", "semantic")
STRATEGY_ALIASES = {"hnsw": "semantic"}
"""gro's name for the semantic strategy, accepted wherever a strategy is named."""
MODES = ("auto", "stepping")

_THREAD_ID = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")


def is_thread_id(name: object) -> bool:
    """Whether ``name`` is a plain name that stays inside ``threads/`` (no separator, no leading '.', no '..')."""
    return isinstance(name, str) and _THREAD_ID.fullmatch(name) is not None


def sequence_number(chunk_id: str) -> int | None:
    """The event number in a chunk id the log gave (``c12`` -> 12); None for any other id."""
    digits = chunk_id[1:]
    return int(digits) if chunk_id[:1] == "c" and digits.isdecimal() else None


def check_thread_id(thread: str) -> str:
    """The thread id, if it is a plain name that stays inside ``threads/``; else a clear error."""
    if not is_thread_id(thread):
        raise InputValidationError(
            f"thread id {thread!r} is not allowed.",
            "Use 1-64 letters, digits, '-', '_' or '.', not starting with '.', e.g. 'support-chat-42'.",
        )
    return thread


def strategy_name(name: str) -> str:
    """The canonical strategy for ``name`` (case-insensitive; ``hnsw`` means semantic); an unknown name is an error."""
    key = (name or "").strip().lower()
    key = STRATEGY_ALIASES.get(key, key)
    if key not in STRATEGIES:
        raise InputValidationError(
            f"unknown context strategy {name!r}.",
            f"Use one of {', '.join(STRATEGIES)} (or hnsw, gro's name for semantic).",
        )
    return key


@dataclass(frozen=True, slots=True)
class Chunk:
    """One unit of a thread's working memory.

    Attributes:
        id: stable id, ``c<seq>`` of the event that added it.
        role: ``user``, ``assistant``, ``system`` or ``tool``.
        content: the text, byte for byte as appended.
        chunk_type: one of `CHUNK_TYPES`.
        subtype: for working-flow chunks, one of `SUBTYPES` (else empty).
        retention: one of `RETENTIONS`.
        importance: 0-1.
        call_id: links a tool call (agent-action) to its result (action-response); never separated.
        parents: for a compacted chunk, the ids of the chunks it replaced.
        at: ISO time the event was recorded.
    """

    id: str
    role: str
    content: str
    chunk_type: str = WORKING_FLOW
    subtype: str = ""
    retention: str = "compressible"
    importance: float = 0.5
    call_id: str | None = None
    parents: tuple[str, ...] = ()
    at: str = ""

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.content)

    @property
    def is_summary(self) -> bool:
        """A compaction's summary of other chunks."""
        return self.subtype == "compacted" and bool(self.parents)

    @property
    def compressible(self) -> bool:
        """Compaction may fold it into a summary: a working-flow chunk of a compressible class, not a summary itself."""
        return self.chunk_type == WORKING_FLOW and self.retention in COMPRESSIBLE and self.subtype != "compacted"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id, "role": self.role, "type": self.chunk_type, "retention": self.retention,
            "importance": self.importance, "content": self.content,
        }
        if self.subtype:
            data["subtype"] = self.subtype
        if self.call_id:
            data["call_id"] = self.call_id
        if self.parents:
            data["parents"] = list(self.parents)
        if self.at:
            data["at"] = self.at
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Chunk:
        return cls(
            id=str(data["id"]), role=str(data["role"]), content=str(data["content"]),
            chunk_type=str(data.get("type", WORKING_FLOW)), subtype=str(data.get("subtype", "")),
            retention=str(data.get("retention", "compressible")), importance=float(data.get("importance", 0.5)),
            call_id=data.get("call_id"), parents=tuple(data.get("parents", ())), at=str(data.get("at", "")),
        )


@dataclass(frozen=True)
class ThreadState:
    """A thread's state after ``version`` events: its chunks in order, and its settings.

    Attributes:
        chunks: the chunks, in conversation order.
        chunk_ids: their ids, same order (``chunk_ids``).
        version: how many events produced it.
        strategy: the context strategy in force.
        mode: ``auto`` or ``stepping``.
        refs: virtual pages (``p3``) and chunks (``c17``) referenced back into the context.
        forked_from: the thread this one was forked from, if any.
        archive: the chunks compaction replaced, by id: a summary's parents stay findable.
        seq: the highest event sequence number applied (0: none).
        archived_turns: how many of the archived chunks are turns (not summaries).
        owner: the agent that created the thread (None: anyone may change it).
        visible_to: the roles that see it (empty: every role), as for entries.
        top_number: the highest ``N`` of a chunk id ``cN`` the thread ever had: a chunk numbered above it is new
            without a look at the others (the reducers keep it).
    """

    chunks: tuple[Chunk, ...] = ()
    chunk_ids: tuple[str, ...] = ()
    version: int = 0
    strategy: str = "virtual"
    mode: str = "auto"
    refs: tuple[str, ...] = ()
    forked_from: str | None = None
    archive: Mapping[str, Chunk] = field(default_factory=lambda: MappingProxyType({}))
    seq: int = 0
    archived_turns: int = 0
    owner: str | None = None
    visible_to: tuple[str, ...] = ()
    top_number: int = 0

    def chunk(self, chunk_id: str) -> Chunk | None:
        """The chunk with this id: in the thread, or one that compaction replaced."""
        for chunk in self.chunks:
            if chunk.id == chunk_id:
                return chunk
        return self.archive.get(chunk_id)

    def originals(self, chunk: Chunk) -> list[Chunk]:
        """The turns ``chunk`` stands for: itself, or for a summary the chunks it replaced (summaries of
        summaries unfolded), in thread order."""
        if not chunk.is_summary:
            return [chunk]
        found: list[Chunk] = []
        for parent_id in chunk.parents:
            parent = self.archive.get(parent_id)
            if parent is not None:
                found.extend(self.originals(parent))
        return found or [chunk]

    @property
    def turns(self) -> int:
        """How many chunks were appended and are still in the thread, compacted ones included (summaries not)."""
        return sum(1 for chunk in self.chunks if not chunk.is_summary) + self.archived_turns

    def turns_after(self, seq: int) -> list[Chunk]:
        """The turns added by events after ``seq`` (ids ``c<N>``, ``N > seq``), in order, compacted ones included:
        found by id, so a timeline grows by what was appended without unfolding every summary again."""
        live = {chunk.id: chunk for chunk in self.chunks}
        found = (live.get(f"c{number}") or self.archive.get(f"c{number}") for number in range(seq + 1, self.seq + 1))
        return [chunk for chunk in found if chunk is not None and not chunk.is_summary]

    def timeline(self) -> list[Chunk]:
        """Every turn of the thread in order, as appended: compaction's summaries unfolded into their originals."""
        if not self.archive:
            return list(self.chunks)
        turns: list[Chunk] = []
        for chunk in self.chunks:
            turns.extend(self.originals(chunk))
        numbers = [sequence_number(chunk.id) for chunk in turns]
        known = [number for number in numbers if number is not None]
        if len(known) == len(numbers):  # a summary may skip turns it kept: back in append order
            return [chunk for _, chunk in sorted(zip(known, turns), key=lambda pair: pair[0])]
        return turns


__all__ = [
    "CHUNK_TYPES", "COMPRESSIBLE", "MODES", "RETENTIONS", "ROLES", "STRATEGIES", "STRATEGY_ALIASES", "SUBTYPES",
    "WORKING_FLOW", "Chunk", "ThreadState", "check_thread_id", "strategy_name",
]
