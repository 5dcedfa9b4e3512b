"""Getting conversations in: transcripts → messages → episodes → entries, idempotently.

Two formats are read (`read_transcript` tells them apart by the first character):

* **Claude Code transcript JSONL** — one JSON object per line. Lines of ``type`` ``user``
  or ``assistant`` carry ``message.content``: a string, or a list of blocks ``{type:
  text|tool_use|tool_result, ...}``; plus ``timestamp``, ``sessionId``, ``cwd`` and
  ``uuid``. Other lines (``summary``, ``system``, snapshots), ``isMeta`` lines, sidechain
  (sub-agent) lines and ``thinking``/image blocks are skipped, and the
  ``<system-reminder>`` blocks Claude Code injects into user messages are stripped (they
  hold memdir's own reminders, which must not feed back into episodes).
* **A plain JSON list** of ``{role, content, timestamp}`` (optional ``name``/``speaker``
  and ``id``), or an object ``{"session_id", "cwd", "messages": [...]}`` holding one.
  ``timestamp`` is ISO 8601 or epoch seconds (or milliseconds); a role ``tool`` is tool output.

Idempotent: episodes are keyed by (session id, start), and an entry whose messages did
not change is not rewritten, so ingesting a transcript twice adds nothing and a
transcript that grew only updates its last episode and adds the new ones.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.core.entry import EPISODES_PREFIX
from memdir.core.errors import InputValidationError
from memdir.core.units import plural
from memdir.episodes.heuristics import clip_words, describe
from memdir.episodes.model import OUTCOMES, Episode, Message
from memdir.episodes.segment import RECORD_TOOL, SegmentConfig, segment
from memdir.episodes.store import SavePlan, SaveResult, Summarize, plan_saves, write_planned

if TYPE_CHECKING:
    from memdir.embeddings.base import Embedder
    from memdir.memory import Memory

log = logging.getLogger(__name__)

TOOL_RESULT_CHARS = 4000  # tool output beyond this tells an episode nothing more
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>\s*", re.DOTALL)
_RECORDED_PATH = re.compile(r"memory://(" + re.escape(EPISODES_PREFIX) + r"[^\s\"'`)]+?\.md)")
_INPUT_KEYS = ("command", "file_path", "path", "pattern", "url", "query", "description", "prompt")


@dataclass
class Transcript:
    """One session's messages as read from a file."""

    session_id: str
    messages: list[Message]
    cwd: str | None = None
    path: str | None = None
    title: str | None = None
    """The conversation's own title (a chat export's), which names its episodes."""


@dataclass
class IngestReport:
    """What an ingest did: entry paths by outcome, and the episodes (in order) with their paths."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    episodes: list[tuple[str, Episode]] = field(default_factory=list)

    @property
    def written(self) -> int:
        return len(self.created) + len(self.updated)

    def describe(self) -> str:
        return (f"{plural(len(self.episodes), 'episode')}: {len(self.created)} new, {len(self.updated)} updated, "
                f"{len(self.unchanged)} unchanged")


# ---------------------------------------------------------------- parsing
FORMATS_HINT = 'Give a JSON list of {"role", "content", "timestamp"} objects, or a Claude Code transcript (.jsonl).'


def parse_time(value: Any) -> datetime | None:
    """ISO 8601 (``Z`` accepted) or epoch seconds/milliseconds → an aware UTC datetime; None if unreadable."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = value / 1000 if value > 1e11 else value
        return datetime.fromtimestamp(seconds, tz=UTC)
    try:
        moment = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _tool_use_text(name: str, arguments: Any) -> str:
    if isinstance(arguments, dict):
        for key in _INPUT_KEYS:
            if isinstance(arguments.get(key), str):
                return f"{name}: {arguments[key]}"
        return f"{name}: {json.dumps(arguments, ensure_ascii=False, sort_keys=True)[:300]}"
    return f"{name}: {arguments}" if arguments else name


def _block_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(block.get("text", "") for block in content if isinstance(block, dict) and block.get("type") == "text")
    return ""


def messages_from_content(role: str, content: Any, **common: Any) -> list[Message]:
    """Flatten one message's content (a string or a list of blocks) into `Message`s."""
    if isinstance(content, str) or content is None:
        text = _REMINDER.sub("", content or "").strip() if role == "user" else (content or "").strip()
        kind = "tool_result" if role == "tool" else "text"
        return [Message(role=role, text=text, kind=kind, **common)] if text else []
    out: list[Message] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        block_type = block.get("type")
        if block_type == "text":
            text = block.get("text") or ""
            text = _REMINDER.sub("", text).strip() if role == "user" else text.strip()
            if text:
                out.append(Message(role="tool" if role == "tool" else role, text=text,
                                   kind="tool_result" if role == "tool" else "text", **common))
        elif block_type == "tool_use":
            name = str(block.get("name") or "tool")
            arguments = block.get("input")
            out.append(Message(role="assistant", text=_tool_use_text(name, arguments), kind="tool_use", tool=name,
                               tool_input=arguments if isinstance(arguments, dict) else None, **common))
        elif block_type == "tool_result":
            text = _block_text(block.get("content"))[:TOOL_RESULT_CHARS].strip()
            is_error = bool(block.get("is_error"))
            if text or is_error:
                out.append(Message(role="tool", text=text, kind="tool_result", is_error=is_error, **common))
    return out


def parse_claude_jsonl(lines: Iterable[str]) -> tuple[list[Message], str | None, str | None]:
    """Messages, session id and cwd from Claude Code transcript lines (unreadable lines are skipped).

    Raises:
        InputValidationError: there are lines, but none is a Claude Code record (an object
            with a ``type``), so this is some other file, not a transcript with nothing said yet.
    """
    messages: list[Message] = []
    session_id = cwd = None
    seen_lines = seen_records = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        seen_lines += 1
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            log.warning("transcript line %d is not JSON; skipped", number)
            continue
        if not isinstance(record, dict) or "type" not in record:
            continue
        seen_records += 1
        if record.get("type") not in ("user", "assistant"):
            continue
        if record.get("isMeta") or record.get("isSidechain"):
            continue
        session_id = session_id or record.get("sessionId")
        cwd = cwd or record.get("cwd")
        body = record.get("message") or {}
        role = body.get("role") or record["type"]
        messages.extend(messages_from_content(
            role, body.get("content"), timestamp=parse_time(record.get("timestamp")), uid=record.get("uuid"),
        ))
    if seen_lines and not seen_records:
        raise InputValidationError(f"The transcript is not Claude Code transcript JSONL: none of its {seen_lines} line(s) "
                                   'is a record with a "type", and it is not a JSON list of messages.', FORMATS_HINT)
    return messages, session_id, cwd


def parse_json_list(data: Any) -> tuple[list[Message], str | None, str | None]:
    """Messages, session id and cwd from ``[{role, content, timestamp}, ...]`` (or ``{"messages": [...]}``)."""
    session_id = cwd = None
    if isinstance(data, dict):
        session_id, cwd = data.get("session_id") or data.get("sessionId"), data.get("cwd")
        data = data.get("messages")
    if not isinstance(data, list):
        raise InputValidationError("The transcript is JSON but not a list of messages.", FORMATS_HINT)
    messages: list[Message] = []
    for number, item in enumerate(data):
        if not isinstance(item, dict):
            raise InputValidationError(
                f"Message {number} of the transcript is {type(item).__name__} {json.dumps(item)[:60]}, not an object.",
                FORMATS_HINT,
            )
        role = str(item.get("role") or "user")
        messages.extend(messages_from_content(
            role, item.get("content", item.get("text")), timestamp=parse_time(item.get("timestamp")),
            uid=str(item["id"]) if item.get("id") is not None else None,
            speaker=item.get("name") or item.get("speaker"),
        ))
    return messages, session_id, cwd


def read_transcript(path: Path | str, *, session_id: str | None = None) -> Transcript:
    """Read a transcript file in either format (see the module docstring)."""
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputValidationError(f"Cannot read transcript {file}: {exc.strerror or exc}.",
                                   "Check the path (a Claude Code transcript is a .jsonl file).") from exc
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            messages, found_id, cwd = parse_json_list(json.loads(stripped))
        except json.JSONDecodeError as exc:
            raise InputValidationError(f"Transcript {file} is not valid JSON: {exc.msg} (line {exc.lineno}).") from exc
    elif _single_json_object(stripped):
        messages, found_id, cwd = parse_json_list(json.loads(stripped))
    else:
        messages, found_id, cwd = parse_claude_jsonl(text.splitlines())
    return Transcript(session_id=session_id or found_id or file.stem, messages=messages, cwd=cwd, path=str(file))


def _single_json_object(text: str) -> bool:
    """True for a pretty-printed ``{"messages": [...]}`` file (JSONL has one object per line)."""
    if not text.startswith("{"):
        return False
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(value, dict) and "messages" in value


def project_name(cwd: str | Path | None) -> str | None:
    """The project a working directory belongs to: its git repository's folder name, else its own name."""
    if not cwd:
        return None
    start = Path(cwd).expanduser()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder.name or None
    return start.name or None


# ---------------------------------------------------------------- episodes
def episodes_from(transcript: Transcript, *, config: SegmentConfig | None = None, embedder: Embedder | None = None,
                  project: str | None = None) -> list[Episode]:
    """Cut a transcript into described episodes (nothing is written)."""
    project = project or project_name(transcript.cwd)
    episodes = []
    for piece in segment(transcript.messages, config, embedder):
        episode = Episode.from_messages(
            transcript.session_id, transcript.messages[piece.start:piece.end], boundary=piece.boundary,
            index=piece.start, project=project, transcript=transcript.path,
        )
        describe(episode, piece.name)
        episodes.append(episode)
    for number, episode in enumerate(episodes, start=1):
        if transcript.title:
            episode.name = _titled(transcript.title, number, len(episodes))
        _apply_agent_record(episode)
    return episodes


def _titled(title: str, number: int, count: int) -> str:
    """An episode's name from its conversation's title: the title, numbered when the conversation has several."""
    name = clip_words(" ".join(title.split()), 12)
    return name if count == 1 else f"{name} ({number}/{count})"


def _apply_agent_record(episode: Episode) -> None:
    """When the agent closed this episode with EpisodeRecord, its own name/outcome/summary/tags win."""
    for message in reversed(episode.messages):
        if message.kind == "tool_use" and (message.tool or "").split("__")[-1] == RECORD_TOOL and message.tool_input:
            arguments = message.tool_input
            if isinstance(arguments.get("name"), str) and arguments["name"].strip():
                episode.name = clip_words(" ".join(arguments["name"].split()), 12)
            if arguments.get("outcome") in OUTCOMES:
                episode.outcome = arguments["outcome"]
            if isinstance(arguments.get("summary"), str) and arguments["summary"].strip():
                episode.summary = " ".join(arguments["summary"].split())
            given = arguments.get("tags")
            tags = given if isinstance(given, list) else []
            episode.tags = list(dict.fromkeys([*(str(t) for t in tags), *episode.tags]))
            episode.source = "agent"
            episode.recorded = _recorded_path(episode.messages, message)
            return


def _recorded_path(messages: Sequence[Message], call: Message) -> str | None:
    """The entry the EpisodeRecord call wrote, read from its tool result (``memory://experience/episodes/…``)."""
    after = False
    for message in messages:
        if message is call:
            after = True
            continue
        if after and message.kind == "tool_result":
            found = _RECORDED_PATH.search(message.text)
            if found:
                return found.group(1)
    return None


def ingest_transcript_object(memory: Memory, transcript: Transcript, *, config: SegmentConfig | None = None,
                             summarize: Summarize | None = None, project: str | None = None,
                             embedder: Embedder | None = None, use_model: bool = True) -> IngestReport:
    """Segment, describe and store one transcript's episodes (see `ingest`)."""
    episodes, plans = plan_transcript(memory, transcript, config=config, summarize=summarize, project=project,
                                      embedder=embedder, use_model=use_model)
    return ingest_report(episodes, write_planned(memory, plans))


def plan_transcript(memory: Memory, transcript: Transcript, *, config: SegmentConfig | None = None,
                    summarize: Summarize | None = None, project: str | None = None,
                    embedder: Embedder | None = None, use_model: bool = True) -> tuple[list[Episode], list[SavePlan]]:
    """A transcript's episodes and what storing them would write (`memdir.episodes.store.plan_saves`),
    nothing written yet: an import batches the writes of many transcripts."""
    config = config or SegmentConfig.from_settings(memory.settings.episodes)
    if embedder is None and use_model and config.topic_threshold is not None:
        embedder = memory.model.get()
    episodes = list(episodes_from(transcript, config=config, embedder=embedder, project=project))
    recorded = [episode.recorded if episode.recorded and memory.exists(episode.recorded) else None for episode in episodes]
    return episodes, plan_saves(memory, list(zip(episodes, recorded)), summarize=summarize)


def ingest_report(episodes: Sequence[Episode], results: Sequence[SaveResult]) -> IngestReport:
    """What storing ``episodes`` did, from each one's outcome."""
    report = IngestReport()
    for episode, result in zip(episodes, results):
        getattr(report, result.status).append(result.path)
        report.episodes.append((result.path, episode))
    return report


def ingest(memory: Memory, transcript: Path | str, *, session_id: str | None = None, cwd: str | None = None,
           config: SegmentConfig | None = None, summarize: Summarize | None = None,
           use_model: bool = True) -> IngestReport:
    """Ingest a transcript file: split it into episodes and store them (idempotent).

    Args:
        memory: the open memory root.
        transcript: a Claude Code ``.jsonl`` transcript or a plain JSON list of messages.
        session_id: overrides the transcript's own session id (default: its ``sessionId``, else the file name).
        cwd: the session's working directory when the transcript does not say (names the project).
        config: boundary rules (default: from ``memory.settings``).
        summarize: optional better name+summary for new or changed episodes (sampling).
        use_model: False skips topic-shift detection (no model load; pauses and markers only).
    """
    parsed = read_transcript(transcript, session_id=session_id)
    if cwd and not parsed.cwd:
        parsed.cwd = cwd
    return ingest_transcript_object(memory, parsed, config=config, summarize=summarize, use_model=use_model)


__all__ = [
    "IngestReport",
    "Transcript",
    "episodes_from",
    "ingest",
    "ingest_report",
    "ingest_transcript_object",
    "messages_from_content",
    "parse_claude_jsonl",
    "parse_json_list",
    "parse_time",
    "plan_transcript",
    "project_name",
    "read_transcript",
]
