"""A message to append: checked and given its defaults before it is queued, built into an event once it is written."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from memdir.core.errors import InputValidationError
from memdir.core.signals import stated_importance
from memdir.threads.markers import Markers, parse_markers
from memdir.threads.model import (
    CHUNK_TYPES,
    RETENTIONS,
    ROLES,
    SUBTYPES,
    WORKING_FLOW,
    Chunk,
    ThreadState,
)
from memdir.threads.reducers import Event

DEFAULT_IMPORTANCE = 0.5
_SUBTYPE_OF_ROLE = {"user": "user", "assistant": "response", "tool": "action-response"}


@dataclass(frozen=True)
class Message:
    """A checked message: its fields, and what its markers ask for."""

    role: str
    content: str
    chunk_type: str
    subtype: str
    retention: str
    importance: float
    call_id: str | None
    markers: Markers
    by: str | None = None  # the agent that appended it (recorded in its event)

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content, "chunk_type": self.chunk_type, "subtype": self.subtype,
                "retention": self.retention, "importance": self.importance, "call_id": self.call_id, "by": self.by}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Message:
        """A message kept on disk while it waited (its markers are read again from its content)."""
        return cls(**data, markers=parse_markers(data["content"]))

    def event(self, seq: int, at: str, state: ThreadState) -> Event:
        """The event that adds it (with its markers' strategy switch and page references, in one BATCH)."""
        call_id = self.call_id
        if call_id is None and self.role == "tool":
            call_id = open_call(state)
        subtype = self.subtype
        if self.chunk_type == WORKING_FLOW and self.role == "assistant" and call_id and subtype == "response":
            subtype = "agent-action"
        chunk = Chunk(id=f"c{seq}", role=self.role, content=self.content, chunk_type=self.chunk_type, subtype=subtype,
                      retention=self.retention, importance=self.importance, call_id=call_id, at=at)
        operations: list[Event] = [{"op": "ADD", "chunk": chunk.to_json()}]
        if self.markers.strategy and self.markers.strategy != state.strategy:
            operations.append({"op": "CONFIGURE", "key": "strategy", "value": self.markers.strategy})
        if self.markers.refs or self.markers.unrefs:
            refs = [page for page in state.refs if page not in self.markers.unrefs]
            refs += [page for page in self.markers.refs if page not in refs]
            operations.append({"op": "CONFIGURE", "key": "refs", "value": refs})
        who = {"by": self.by} if self.by else {}
        if len(operations) == 1:
            return {"seq": seq, "at": at, **who, **operations[0]}
        return {"seq": seq, "at": at, **who, "op": "BATCH", "events": operations}


def open_call(state: ThreadState) -> str | None:
    """The latest tool call that has no result yet (a tool message without ``call_id`` answers it)."""
    answered: set[str] = set()
    for chunk in reversed(state.chunks):
        if not chunk.call_id:
            continue
        if chunk.role == "tool":
            answered.add(chunk.call_id)
        elif chunk.call_id not in answered:
            return chunk.call_id
    return None


def message(role: str, content: str, *, chunk_type: str | None = None, retention: str | None = None,
            importance: float | None = None, call_id: str | None = None, max_bytes: int) -> Message:
    """A checked `Message`, with defaults from its role; any problem is an `InputValidationError`.

    ``chunk_type`` is a chunk type (``system``, ``working-flow``…), a working-flow subtype
    (``thinking``, ``agent-action``…) or both (``working-flow/thinking``).
    """
    if role not in ROLES:
        raise InputValidationError(f"role must be one of {', '.join(ROLES)}; got {role!r}.",
                                   "Use user, assistant, system, or tool for a tool's result.")
    if not isinstance(content, str) or not content.strip():
        raise InputValidationError("content is empty.", "Pass the message's text.")
    _check_text("content", content)
    size = len(content.encode("utf-8"))
    if size > max_bytes:
        raise InputValidationError(f"content is {size:,} bytes; a message may hold at most {max_bytes:,}.",
                                   "Split it into several messages, or store the document as a memory entry.")
    kind, subtype = _chunk_type(role, chunk_type)
    retention = retention or ("critical" if kind == "system" else "compressible")
    if retention not in RETENTIONS:
        raise InputValidationError(f"retention must be one of {', '.join(RETENTIONS)}; got {retention!r}.",
                                   "critical is never compacted; compressible is the default.")
    value = importance if importance is not None else _default_importance(role, content)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not 0 <= value <= 1:
        raise InputValidationError(f"importance must be a number from 0 to 1; got {importance!r}.",
                                   "0.7 and above keeps a message verbatim in the virtual strategy.")
    if call_id is not None and (not isinstance(call_id, str) or not call_id.strip()):
        raise InputValidationError("call_id must be a non-empty string.", "Use the id your tool call had.")
    if call_id is not None:
        _check_text("call_id", call_id)
    return Message(role, content, kind, subtype, retention, float(value), call_id, parse_markers(content))


def _check_text(name: str, text: str) -> None:
    """Refuse text that UTF-8 cannot store (a lone surrogate, as a broken client may send)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputValidationError(
            f"{name} holds {text[exc.start]!r} at character {exc.start}, half of a surrogate pair, which is no text.",
            "Send the text as valid Unicode (the pair whole, or the character it stands for).",
        ) from exc


def _default_importance(role: str, content: str) -> float:
    """What a message says about itself ("Remember: …", "we decided …"), else the default; a tool's output
    speaks for the tool, not for the agent."""
    stated = stated_importance(content) if role != "tool" else None
    return DEFAULT_IMPORTANCE if stated is None else stated


def _chunk_type(role: str, given: str | None) -> tuple[str, str]:
    if not given:
        return ("system", "") if role == "system" else (WORKING_FLOW, _SUBTYPE_OF_ROLE[role])
    kind, _, subtype = given.partition("/")
    if kind in SUBTYPES and not subtype:
        kind, subtype = WORKING_FLOW, kind
    if kind not in CHUNK_TYPES or (subtype and (kind != WORKING_FLOW or subtype not in SUBTYPES)):
        raise InputValidationError(
            f"chunk_type {given!r} is not known.",
            f"Use one of {', '.join(CHUNK_TYPES)}, or a working-flow subtype: {', '.join(SUBTYPES)}.",
        )
    if kind == WORKING_FLOW and not subtype:
        subtype = _SUBTYPE_OF_ROLE.get(role, "")
    return kind, subtype


__all__ = ["DEFAULT_IMPORTANCE", "Message", "message", "open_call"]
