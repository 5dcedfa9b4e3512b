"""Claude.ai and ChatGPT conversation exports -> episodes, cut by memdir's episode segmentation.

Both services export a zip holding ``conversations.json`` (Claude: Settings -> Privacy ->
Export data; ChatGPT: Settings -> Data controls -> Export data). Neither publishes a schema;
the shapes read here are those the exports hold, as basic-memory's importers read them too
(basicmachines-co/basic-memory, ``importers/claude_conversations_importer.py`` and
``importers/chatgpt_importer.py``):

* Claude.ai: a list of ``{"uuid", "name", "created_at", "updated_at", "chat_messages": [{"uuid",
  "sender": "human"|"assistant", "created_at", "text", "content": [{"type": "text", "text"}]}]}``;
* ChatGPT: a list of ``{"id"|"conversation_id", "title", "create_time", "update_time",
  "current_node", "mapping": {node id: {"message": {"id", "author": {"role"}, "create_time",
  "content": {"content_type", "parts"}}, "parent", "children"}}}``; the conversation is the
  branch from ``current_node`` back to the root (the one the user last saw), messages hidden
  from the conversation and system messages left out.

Each conversation becomes a transcript whose session id is ``claude.ai:<uuid>`` or
``chatgpt:<id>``, titled as the conversation is (``name`` / ``title``: the episodes' names, numbered
when it is cut into several); `memdir.episodes.ingest.ingest_transcript_object` cuts it into episodes and
stores them (each keeps that session id, the conversation's times and its source file), so a
second import changes nothing and a conversation that went on updates only its last episode.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.core.errors import InputValidationError
from memdir.episodes.ingest import Transcript, ingest_report, messages_from_content, parse_time, plan_transcript
from memdir.episodes.model import Episode, Message
from memdir.episodes.store import SavePlan, write_planned
from memdir.importers.plan import ImportReport, Skipped
from memdir.importers.source import read_json

if TYPE_CHECKING:
    from memdir.importers.journal import ImportJournal
    from memdir.memory import Memory

EXPORT_FILE = "conversations.json"


def load(source: Path) -> Any:
    """The conversations list of an export: ``conversations.json``, or the export's zip holding it."""
    if zipfile.is_zipfile(source):
        with zipfile.ZipFile(source) as archive:
            names = [name for name in archive.namelist() if name.rsplit("/", 1)[-1] == EXPORT_FILE]
            if not names:
                raise InputValidationError(f"{source} holds no {EXPORT_FILE}.", "Give the export's zip or the file itself.")
            try:
                data = json.loads(archive.read(names[0]).decode("utf-8", errors="replace"))
            except json.JSONDecodeError as exc:
                raise InputValidationError(f"{names[0]} in {source} is not JSON: {exc.msg}.") from exc
    else:
        data = read_json(source)
    if not isinstance(data, list):
        raise InputValidationError(f"{source} is not a list of conversations.",
                                   f"Give the export's {EXPORT_FILE} (or the zip it came in).")
    return data


def claude_transcript(item: Any) -> Transcript | str:
    """One Claude.ai conversation as a transcript, or why it cannot be read."""
    if not isinstance(item, dict) or not isinstance(item.get("chat_messages"), list):
        return 'not a Claude.ai conversation (no "chat_messages" list)'
    ident = item.get("uuid")
    if not isinstance(ident, str) or not ident:
        return 'it has no "uuid"'
    messages: list[Message] = []
    for message in item["chat_messages"]:
        if not isinstance(message, dict):
            continue
        role = "user" if message.get("sender") == "human" else "assistant"
        content = message.get("content") if isinstance(message.get("content"), list) and message["content"] else message.get("text")
        messages.extend(messages_from_content(role, content, timestamp=parse_time(message.get("created_at")),
                                              uid=str(message["uuid"]) if message.get("uuid") else None))
    return Transcript(session_id=f"claude.ai:{ident}", messages=messages, title=_title(item.get("name")))


def chatgpt_transcript(item: Any) -> Transcript | str:
    """One ChatGPT conversation as a transcript (the branch the user last saw), or why it cannot be read."""
    if not isinstance(item, dict) or not isinstance(item.get("mapping"), dict):
        return 'not a ChatGPT conversation (no "mapping" of messages)'
    ident = item.get("conversation_id") or item.get("id")
    if not isinstance(ident, str) or not ident:
        return 'it has no "id"'
    mapping: dict[str, Any] = item["mapping"]
    messages: list[Message] = []
    for node in reversed(_branch(mapping, item.get("current_node"))):
        message = node.get("message") if isinstance(node, dict) else None
        if not isinstance(message, dict) or (message.get("metadata") or {}).get("is_visually_hidden_from_conversation"):
            continue
        role = (message.get("author") or {}).get("role")
        if role not in ("user", "assistant", "tool"):
            continue
        messages.extend(messages_from_content(role, _chatgpt_text(message.get("content")),
                                              timestamp=parse_time(message.get("create_time")),
                                              uid=str(message["id"]) if message.get("id") else None))
    return Transcript(session_id=f"chatgpt:{ident}", messages=messages, title=_title(item.get("title")))


def _title(value: Any) -> str | None:
    """A conversation's title as its export gives it (None when it has none)."""
    return value.strip() if isinstance(value, str) and value.strip() else None


def _branch(mapping: dict[str, Any], current: Any) -> list[Any]:
    """The nodes from ``current`` (else the last leaf) back to the root; a loop in the parents ends it."""
    if not isinstance(current, str) or current not in mapping:
        leaves = [key for key, node in mapping.items() if isinstance(node, dict) and not node.get("children")]
        current = leaves[-1] if leaves else None
    nodes, seen = [], set()
    while isinstance(current, str) and current in mapping and current not in seen:
        seen.add(current)
        node = mapping[current]
        nodes.append(node)
        current = node.get("parent") if isinstance(node, dict) else None
    return nodes


def _chatgpt_text(content: Any) -> str:
    if not isinstance(content, dict):
        return ""
    if content.get("content_type") == "code":
        return f"```{content.get('language') or ''}\n{content.get('text') or ''}\n```"
    parts = content.get("parts")
    if not isinstance(parts, list):
        parts = [content.get("text")]
    return "\n".join(part for part in parts if isinstance(part, str))


BATCH = 64
"""Conversations whose episodes are written together (`Memory.write_many`), each batch journaled first."""


def import_conversations(memory: Memory, source: Path, source_format: str,
                         read: Callable[[Any], Transcript | str], journal: ImportJournal,
                         progress: Callable[[int, int], None] | None = None) -> ImportReport:
    """Cut each conversation of an export into episodes and store them (see the module docstring),
    in journaled batches."""
    conversations = load(source)
    report = ImportReport(source_format)
    batch: list[tuple[list[Episode], list[SavePlan]]] = []
    sessions: set[str] = set()
    for number, item in enumerate(conversations, start=1):
        transcript = read(item)
        label = f"conversation {number}" + (f" ({transcript.session_id})" if isinstance(transcript, Transcript) else "")
        if isinstance(transcript, str):
            report.skipped.append(Skipped(label, transcript))
        elif not transcript.messages:
            report.skipped.append(Skipped(label, "it holds no messages with text"))
        else:
            if transcript.session_id in sessions:  # the same conversation twice: the first written before it is planned
                _write(memory, batch, journal, report)
                batch, sessions = [], set()
            transcript.path = str(source)
            # cut by the words alone: the same episodes whether the model is installed or not (a re-import changes nothing)
            batch.append(plan_transcript(memory, transcript, use_model=False))
            sessions.add(transcript.session_id)
        if len(batch) >= BATCH or number == len(conversations):
            _write(memory, batch, journal, report)
            batch, sessions = [], set()
        if progress is not None:
            progress(number, len(conversations))
    return report


def _write(memory: Memory, batch: list[tuple[list[Episode], list[SavePlan]]], journal: ImportJournal,
           report: ImportReport) -> None:
    """Write the episodes a batch of conversations planned, in one `Memory.write_many`, journaled first."""
    plans = [plan for _, conversation in batch for plan in conversation]
    journal.before([target for target, write in plans if write is not None])
    results = iter(write_planned(memory, plans))
    for episodes, conversation in batch:
        done = ingest_report(episodes, [next(results) for _ in conversation])
        report.created += done.created
        report.updated += done.updated
        report.unchanged += done.unchanged


__all__ = ["chatgpt_transcript", "claude_transcript", "import_conversations", "load"]
