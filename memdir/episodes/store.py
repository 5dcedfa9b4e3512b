"""Episodes as memory entries: ``experience/episodes/<yyyy-mm-dd>/<slug>-<key>.md``.

An episode is a normal entry (type ``experience``), so MemoryGrep, MemoryGlob, search and
defrag all see it. Its episode fields live in the metadata's extra keys::

    type: experience
    tags: [memdir, ValueError, store.py, pytest]
    source: transcript            # or "agent" (EpisodeRecord)
    session_id: 5f0c…
    episode: Fix the ValueError in store.py
    outcome: success              # success | failure | blocked | ongoing
    importance: 0.8
    started: '2025-06-01T10:00:00+00:00'
    ended: '2025-06-01T10:42:00+00:00'
    tokens: 1834
    messages: 14
    project: memdir
    transcript: /home/me/.claude/projects/…/5f0c….jsonl
    digest: 3b9f…                 # fingerprint of the messages: unchanged → not rewritten

The ``<key>`` (8 hex digits) is a hash of (session id, start time), so the same episode
always lands on the same entry: ingesting a transcript twice adds nothing, and a
transcript that grew only updates its last episode. The slug comes from the name when
first written and is kept afterwards (a better name from sampling does not move it).
The content is a short readable summary plus the key messages, held to the
``word_limit`` (250 words) like any entry.
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from memdir.core.entry import EPISODES_PREFIX
from memdir.core.errors import EntryNotFoundError, InputValidationError
from memdir.embeddings.text import first_paragraph
from memdir.episodes.heuristics import clip_words, key_messages, quoted_text
from memdir.episodes.model import OUTCOMES, Episode

if TYPE_CHECKING:
    from memdir.core.entry import Entry
    from memdir.core.identity import Actor
    from memdir.memory import Memory, NewEntry

log = logging.getLogger(__name__)

UNDATED = "undated"
OUTCOME_ICONS = {"success": "✅", "failure": "❌", "blocked": "⛔", "ongoing": "🔄"}
KEY_MESSAGE_WORDS = 40

# A summarizer (see `memdir.episodes.sampling`) returns a better (name, summary), or None to keep the heuristics'.
Summarize = Callable[[Episode], "tuple[str, str] | None"]
SaveStatus = Literal["created", "updated", "unchanged"]


@dataclass(frozen=True, slots=True)
class SaveResult:
    path: str
    status: SaveStatus


@dataclass(frozen=True, slots=True)
class StoredEpisode:
    """An episode as read back from its entry (what listings and recall work with)."""

    path: str
    name: str
    outcome: str
    importance: float
    started: datetime | None
    ended: datetime | None
    tokens: int
    tags: list[str] = field(default_factory=list)
    session_id: str | None = None
    project: str | None = None
    summary: str = ""
    source: str | None = None
    updated_at: datetime | None = None

    @property
    def when(self) -> datetime | None:
        """The time recency is measured from: the end, else the start, else the last write."""
        return self.ended or self.started or self.updated_at


# ---------------------------------------------------------------- paths and fingerprints
def episode_key(session_id: str, started: datetime | None, index: int = 0) -> str:
    """8 hex digits identifying an episode by (session, start); undated episodes by position."""
    moment = started.astimezone(UTC).isoformat() if started else f"#{index}"
    return hashlib.sha256(f"{session_id}|{moment}".encode()).hexdigest()[:8]


def slugify(text: str, max_length: int = 48) -> str:
    """``Fix the ValueError in store.py!`` → ``fix-the-valueerror-in-store-py``."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    if len(slug) > max_length:
        slug = slug[:max_length].rsplit("-", 1)[0] or slug[:max_length]
    return slug or "episode"


def date_folder(started: datetime | None) -> str:
    return started.astimezone(UTC).strftime("%Y-%m-%d") if started else UNDATED


def episode_path(episode: Episode) -> str:
    """Where a new episode is written: ``experience/episodes/<date>/<slug>-<key>.md``."""
    key = episode_key(episode.session_id, episode.started, episode.index)
    return f"{EPISODES_PREFIX}{date_folder(episode.started)}/{slugify(episode.name)}-{key}.md"


def digest(episode: Episode) -> str:
    """A fingerprint of an episode's messages (and the agent's own record, when there is one)."""
    hasher = hashlib.sha256()
    for message in episode.messages:
        stamp = message.timestamp.isoformat() if message.timestamp else ""
        hasher.update(f"{message.role}\x1f{message.kind}\x1f{stamp}\x1f{message.text}\x1e".encode())
    if episode.source != "transcript":
        hasher.update(f"{episode.name}\x1f{episode.summary}\x1f{episode.outcome}\x1f{episode.tags}".encode())
    return hasher.hexdigest()[:16]


def find_existing(memory: Memory, episode: Episode) -> str | None:
    """The path of the entry already holding this episode (same key in its date folder), if any."""
    key = episode_key(episode.session_id, episode.started, episode.index)
    folder = f"{EPISODES_PREFIX}{date_folder(episode.started)}/"
    for info in memory.list(folder):
        if info.path.endswith(f"-{key}.md"):
            return info.path
    return None


# ---------------------------------------------------------------- rendering
def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat() if moment else None


def _span(episode: Episode) -> str:
    if not episode.started:
        return "undated"
    start = episode.started.astimezone(UTC)
    end = (episode.ended or episode.started).astimezone(UTC)
    tail = end.strftime("%H:%M") if end.date() == start.date() else end.strftime("%Y-%m-%d %H:%M")
    return f"{start:%Y-%m-%d %H:%M}–{tail} UTC"


def render(episode: Episode, word_limit: int = 250) -> str:
    """The entry's content: heading, summary paragraph, facts line, key messages (within ``word_limit``)."""
    size = (f"{len(episode.messages)} messages, ~{episode.tokens:,} tokens" if episode.messages
            else f"recorded by the {episode.source}")
    facts = (
        f"- **Outcome:** {OUTCOME_ICONS.get(episode.outcome, '')} {episode.outcome} · **importance** "
        f"{episode.importance:.2f} · {_span(episode)} · {size}"
    )
    context = [f"- **Session:** {episode.session_id}" + (f" · **project:** {episode.project}" if episode.project else "")]
    if episode.tags:
        context.append(f"- **Tags:** {', '.join(episode.tags)}")
    head = [f"# {episode.name}", "", " ".join(episode.summary.split()) or "(no summary)", "", facts, *context]
    quotes = []
    for message in key_messages(episode.messages):
        stamp = f" {message.timestamp.astimezone(UTC):%H:%M}" if message.timestamp else ""
        text = clip_words(" ".join(quoted_text(message).split()), KEY_MESSAGE_WORDS)
        quotes.append(f"- **{message.who}**{stamp}: {text}")
    while True:
        body = head + (["", "## Key messages", *quotes] if quotes else [])
        content = "\n".join(body) + "\n"
        if len(content.split()) <= word_limit or not quotes:
            return content
        quotes.pop()


def metadata(episode: Episode) -> dict[str, Any]:
    """The entry's metadata: ``type: experience`` plus the episode keys (see the module docstring)."""
    data: dict[str, Any] = {
        "type": "experience",
        "tags": list(episode.tags),
        "source": episode.source,
        "session_id": episode.session_id,
        "episode": episode.name,
        "outcome": episode.outcome,
        "importance": round(float(episode.importance), 3),
        "started": _iso(episode.started),
        "ended": _iso(episode.ended),
        "tokens": episode.tokens,
        "messages": len(episode.messages),
        "project": episode.project,
        "transcript": episode.transcript,
        "digest": digest(episode),
    }
    return {key: value for key, value in data.items() if value is not None}


# ---------------------------------------------------------------- writing
def save(memory: Memory, episode: Episode, *, path: str | None = None, summarize: Summarize | None = None) -> SaveResult:
    """Write an episode unless the same one is already stored (see `save_many`).

    Args:
        memory: the open memory root.
        episode: a described episode (`memdir.episodes.heuristics.describe`).
        path: write here (an entry the agent recorded for this episode) instead of the derived path.
        summarize: optional better name+summary (sampling); failures fall back to the heuristics'.

    Returns:
        The entry's path and whether it was created, updated or left unchanged.
    """
    return save_many(memory, [(episode, path)], summarize=summarize)[0]


def save_many(memory: Memory, episodes: Sequence[tuple[Episode, str | None]], *,
              summarize: Summarize | None = None) -> list[SaveResult]:
    """Write each episode (with the path to write it to, or None for its own) unless the same one is
    already stored, embedding the new and changed ones together in batches (`Memory.write_many`)."""
    return write_planned(memory, plan_saves(memory, episodes, summarize=summarize))


SavePlan = tuple[str, "NewEntry | None"]
"""Where an episode goes, and what to write there (None: the same episode is stored there already)."""


def plan_saves(memory: Memory, episodes: Sequence[tuple[Episode, str | None]], *,
               summarize: Summarize | None = None) -> list[SavePlan]:
    """What `save_many` would write, nothing written yet (so that a caller can batch and journal it)."""
    from memdir.memory import NewEntry

    plans: list[SavePlan] = []
    for episode, path in episodes:
        target = path or find_existing(memory, episode)
        if target is not None and _stored_digest(memory, target) == digest(episode):
            plans.append((target, None))
            continue
        if summarize is not None:
            _apply_summary(episode, summarize)
        target = target or episode_path(episode)
        plans.append((target, NewEntry(target, render(episode, memory.settings.limits.word_limit), episode.name,
                                       metadata(episode))))
    return plans


def write_planned(memory: Memory, plans: Sequence[SavePlan]) -> list[SaveResult]:
    """Write what `plan_saves` planned, in one `Memory.write_many`; each episode's outcome."""
    written = iter(memory.write_many([write for _, write in plans if write is not None]))
    results = []
    for target, write in plans:
        if write is None:
            results.append(SaveResult(target, "unchanged"))
        else:
            result = next(written)
            results.append(SaveResult(result.entry.path, "updated" if result.overwritten else "created"))
    return results


def _stored_digest(memory: Memory, path: str) -> Any:
    """The digest of the episode stored at ``path`` (None: none stored there)."""
    try:
        return _extra(memory.read(path), "digest")
    except EntryNotFoundError:
        return None


def _apply_summary(episode: Episode, summarize: Summarize) -> None:
    try:
        better = summarize(episode)
    except Exception:  # sampling is a nicety: any failure keeps the heuristic name and summary
        log.warning("episode summarizer failed; keeping the heuristic name and summary", exc_info=True)
        return
    if better:
        name, summary = better
        if name and name.strip():
            episode.name = clip_words(" ".join(name.split()), 12)
        if summary and summary.strip():
            episode.summary = clip_words(" ".join(summary.split()), 90)


# ---------------------------------------------------------------- reading
def _extra(entry: Entry, key: str) -> Any:
    return entry.metadata.model_dump().get(key)


def _parse_time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if not value:
        return None
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def stored_episode(entry: Entry) -> StoredEpisode:
    """An entry under ``experience/episodes/`` read as an episode (missing keys get neutral values)."""
    data = entry.metadata.model_dump()
    try:
        importance = float(data.get("importance") or 0.0)
    except (TypeError, ValueError):
        importance = 0.0
    try:
        tokens = int(data.get("tokens") or 0)
    except (TypeError, ValueError):
        tokens = 0
    outcome = str(data.get("outcome") or "ongoing")
    return StoredEpisode(
        path=entry.path,
        name=str(data.get("episode") or entry.title or entry.path.rsplit("/", 1)[-1]),
        outcome=outcome if outcome in OUTCOMES else "ongoing",
        importance=importance,
        started=_parse_time(data.get("started")),
        ended=_parse_time(data.get("ended")),
        tokens=tokens,
        tags=[str(tag) for tag in data.get("tags") or []],
        session_id=data.get("session_id"),
        project=data.get("project"),
        summary=first_paragraph(entry.content, entry.title),
        source=data.get("source"),
        updated_at=entry.updated_at,
    )


def read_episode(memory: Memory, path: str) -> StoredEpisode:
    return stored_episode(memory.read(path))


def iter_recent(memory: Memory, view: Actor | None = None) -> Iterator[StoredEpisode]:
    """Stored episodes in ``view`` (`Memory.list`; None: all), date folders newest first (within a
    folder, latest end first); undated last.

    Lazy, so the session-start reminder reads only the newest folders.
    """
    folders: dict[str, list[str]] = {}
    for info in memory.list(EPISODES_PREFIX, view=view):
        rest = info.path[len(EPISODES_PREFIX):]
        folder = rest.split("/", 1)[0] if "/" in rest else ""
        folders.setdefault(folder, []).append(info.path)
    dated = sorted((name for name in folders if name != UNDATED), reverse=True)
    for name in [*dated, *([UNDATED] if UNDATED in folders else [])]:
        batch = []
        for path in folders[name]:
            try:
                batch.append(read_episode(memory, path))
            except EntryNotFoundError:  # deleted meanwhile
                continue
        epoch = datetime.min.replace(tzinfo=UTC)
        yield from sorted(batch, key=lambda episode: episode.when or epoch, reverse=True)


def parse_since(value: str | datetime | None, now: datetime | None = None) -> datetime | None:
    """``7d``/``12h``/``2w``/``30m``, ``today``, ``yesterday`` or an ISO date/time → an aware datetime."""
    if value is None or isinstance(value, datetime):
        return _parse_time(value) if value else None
    text = value.strip().lower()
    if not text:
        return None
    now = now or datetime.now(UTC)
    relative = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(m|min|h|d|w)", text)
    if relative:
        amount, unit = float(relative.group(1)), relative.group(2)
        minutes = {"m": 1, "min": 1, "h": 60, "d": 1440, "w": 10080}[unit]
        return now - timedelta(minutes=amount * minutes)
    if text in ("today", "yesterday"):
        midnight = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        return midnight - timedelta(days=1 if text == "yesterday" else 0)
    moment = _parse_time(value.strip())
    if moment is None:
        raise InputValidationError(
            f"Cannot read since={value!r} as a time.",
            "Use an ISO date such as '2025-06-01', a relative age such as '7d', '12h' or '2w', or 'yesterday'.",
        )
    return moment


def list_episodes(
    memory: Memory,
    *,
    outcome: str | None = None,
    tag: str | None = None,
    since: datetime | None = None,
    project: str | None = None,
    limit: int | None = None,
    view: Actor | None = None,
) -> list[StoredEpisode]:
    """Stored episodes in ``view`` (an actor's role view; None: all), most recent first, filtered by
    outcome, tag (case-insensitive), time and project."""
    found: list[StoredEpisode] = []
    wanted_tag = tag.casefold() if tag else None
    wanted_project = project.casefold() if project else None
    for episode in iter_recent(memory, view):
        if since is not None and episode.when is not None and episode.when < since:
            if episode.started is not None and episode.started < since - timedelta(days=2):
                break  # folders are by start date; nothing further back can qualify
            continue
        if outcome and episode.outcome != outcome:
            continue
        if wanted_tag and wanted_tag not in {t.casefold() for t in episode.tags}:
            continue
        if wanted_project and not _in_project(episode, wanted_project):
            continue
        found.append(episode)
        if limit is not None and len(found) >= limit:
            break
    epoch = datetime.min.replace(tzinfo=UTC)
    return sorted(found, key=lambda episode: episode.when or epoch, reverse=True)


def _in_project(episode: StoredEpisode, project: str) -> bool:
    if episode.project:
        return episode.project.casefold() == project
    return project in {t.casefold() for t in episode.tags}


__all__ = [
    "EPISODES_PREFIX",
    "OUTCOME_ICONS",
    "SavePlan",
    "SaveResult",
    "StoredEpisode",
    "Summarize",
    "date_folder",
    "digest",
    "episode_key",
    "episode_path",
    "find_existing",
    "iter_recent",
    "list_episodes",
    "metadata",
    "parse_since",
    "plan_saves",
    "read_episode",
    "render",
    "save",
    "save_many",
    "slugify",
    "stored_episode",
    "write_planned",
]
