"""Episode boundaries: where one task ends and the next begins.

Three kinds of boundary, checked in this order:

* **pause** — more than ``pause`` (default 5 minutes, `Settings.episode_pause_minutes`)
  between two consecutive timestamped messages.
* **marker** — explicit text in a user or assistant message (not in tool output):

  ======================================  ============================================
  marker                                  effect
  ======================================  ============================================
  ``CLAIM: <task>`` (line start)          a new episode starts *at* this message
  ``EPISODE: <name>`` (line start)        a new episode starts *at* this message
  ``<!-- memdir:episode --> <name>``      same as ``EPISODE:`` (invisible in rendered
                                          markdown, so an agent can emit it freely)
  ``next task`` (anywhere)                a new episode starts *at* this message
  ``ENDEX:`` (line start)                 the episode ends *after* this message
  an ``EpisodeRecord`` tool call          the episode ends after the call (and its
                                          result): the agent closed it itself
  ======================================  ============================================

  The text after ``CLAIM:``/``EPISODE:``/the HTML marker/``next task:`` names the episode.
  A ``TAGS: a, b`` line (or ``<!-- memdir:tags a, b -->``) starts nothing: it hints the
  running episode's tags (`memdir.episodes.heuristics.extract_tags`).
* **topic** — a shift of subject: the mean embedding of the ``window`` conversational
  messages before a position and of the ``window`` after it are compared, and a
  boundary is placed where their cosine *distance* exceeds ``topic_threshold``
  (`Settings.episode_topic_threshold`) and is the largest of its neighbours, provided the
  running episode already holds ``min_messages`` conversational messages. The default
  figures were tuned on LoCoMo (see `TOPIC_THRESHOLD` and
  ``bench/bench_episodes_locomo.py --tune``).

Boundaries only depend on the messages up to ``window + 1`` positions after them, so
a transcript that grows (a ``Stop`` hook re-ingesting after every reply) never moves an
earlier boundary: re-ingesting updates the last episode and adds new ones.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from memdir.episodes.model import Message

if TYPE_CHECKING:
    from memdir.core.sections import EpisodesSettings
    from memdir.embeddings.base import Embedder

EPISODE_MARKER = "<!-- memdir:episode -->"

# Tuned on LoCoMo (bench/bench_episodes_locomo.py --tune): see the figure's docstring there.
TOPIC_THRESHOLD = 0.55
TOPIC_WINDOW = 4
TOPIC_MIN_MESSAGES = 6
EMBED_CHARS = 600  # per message: the opening says what it is about, and the cost grows with length

_START_MARKERS = (
    re.compile(r"^[ \t>*_#-]*CLAIM:[ \t]*(?P<name>[^\n]*)", re.MULTILINE),
    re.compile(r"^[ \t>*_#-]*EPISODE:[ \t]*(?P<name>[^\n]*)", re.MULTILINE),
    re.compile(re.escape(EPISODE_MARKER) + r"[ \t]*(?P<name>[^\n]*)"),
    re.compile(r"\bnext task\b[ \t]*(?:[:\-—][ \t]*(?P<name>[^\n]*))?", re.IGNORECASE),
)
_END_MARKER = re.compile(r"^[ \t>*_#-]*ENDEX:", re.MULTILINE)
TAGS_MARKER = re.compile(r"^[ \t>*_#-]*TAGS:[ \t]*(?P<a>[^\n]*)|<!-- memdir:tags[ \t]+(?P<b>[^\n]*?)[ \t]*-->", re.MULTILINE)
_MARKER_LINES = re.compile(
    r"^[ \t>*_#-]*(?:CLAIM|EPISODE|ENDEX|TAGS):[^\n]*\n?|" + re.escape(EPISODE_MARKER) + r"[^\n]*\n?"
    + r"|<!-- memdir:tags[^\n]*?-->[ \t]*\n?",
    re.MULTILINE,
)
RECORD_TOOL = "EpisodeRecord"


@dataclass(frozen=True, slots=True)
class SegmentConfig:
    """How boundaries are found (defaults: `Settings`' episode fields).

    Attributes:
        pause: a gap longer than this between two messages starts a new episode.
        topic_threshold: cosine distance between consecutive windows that counts as a
            topic shift; None turns topic detection off.
        window: conversational messages per window.
        min_messages: no topic cut before the running episode has this many
            conversational messages (stops one episode per sentence).
    """

    pause: timedelta = timedelta(minutes=5)
    topic_threshold: float | None = TOPIC_THRESHOLD
    window: int = TOPIC_WINDOW
    min_messages: int = TOPIC_MIN_MESSAGES

    @classmethod
    def from_settings(cls, episodes: EpisodesSettings) -> SegmentConfig:
        """The boundaries the episode settings ask for (a topic threshold of 0 turns topic cuts off)."""
        threshold = episodes.topic_threshold
        return cls(
            pause=timedelta(minutes=episodes.pause_minutes),
            topic_threshold=None if threshold <= 0 else threshold,
            window=episodes.topic_window,
            min_messages=episodes.topic_min_messages,
        )


@dataclass(frozen=True, slots=True)
class Segment:
    """Messages ``[start, end)`` of a session form one episode, begun for ``boundary``."""

    start: int
    end: int
    boundary: str
    name: str | None = None  # the name a marker gave, if any


def start_marker(message: Message) -> str | None:
    """The name given by a start marker in ``message`` ("" for a marker without a name), or None."""
    if not message.conversational:
        return None
    for pattern in _START_MARKERS:
        found = pattern.search(message.text)
        if found:
            return (found.group("name") or "").strip().strip("*_`").strip()
    return None


def without_markers(text: str) -> str:
    """``text`` without its marker lines (``CLAIM:``, ``EPISODE:``, ``ENDEX:``, ``TAGS:``, the HTML
    markers): they steer segmentation, name and tag the episode, they are not what it quotes."""
    return _MARKER_LINES.sub("", text)


def hinted_tags(text: str) -> list[str]:
    """The tags ``TAGS:`` lines and ``<!-- memdir:tags … -->`` markers in ``text`` hint, in order (comma-separated)."""
    found = []
    for match in TAGS_MARKER.finditer(text):
        found += [tag.strip() for tag in (match.group("a") or match.group("b") or "").split(",") if tag.strip()]
    return found


def is_end_marker(message: Message) -> bool:
    """True when ``message`` closes its episode: ``ENDEX:`` or the agent's EpisodeRecord call."""
    if message.kind == "tool_use":
        return (message.tool or "").split("__")[-1] == RECORD_TOOL
    return message.conversational and bool(_END_MARKER.search(message.text))


def window_distances(messages: Sequence[Message], embedder: Embedder, window: int) -> dict[int, float]:
    """Cosine distance between the windows before and after each conversational position.

    Returns:
        ``{message index: distance}`` for every conversational message that has
        ``window`` conversational messages before it and ``window`` from it on.
    """
    import numpy as np  # the marker rules above need no numpy (the server's prompts import them)

    positions = [i for i, message in enumerate(messages) if message.conversational and message.text.strip()]
    if window < 1 or len(positions) < 2 * window:
        return {}
    vectors = embedder.embed([messages[i].text[:EMBED_CHARS] for i in positions]).astype(np.float32)
    cumulative = np.vstack([np.zeros((1, vectors.shape[1]), np.float32), np.cumsum(vectors, axis=0)])
    means = cumulative[window:] - cumulative[:-window]  # means[p] = sum of vectors[p:p+window]
    norms = np.linalg.norm(means, axis=1, keepdims=True)
    means = means / np.where(norms == 0, 1, norms)
    distances: dict[int, float] = {}
    for k in range(window, len(positions) - window + 1):
        distances[positions[k]] = float(1.0 - means[k - window] @ means[k])
    return distances


def topic_candidates(distances: dict[int, float], threshold: float) -> list[int]:
    """Positions whose distance exceeds ``threshold`` and is a local maximum (ties: the first).

    The last position is never chosen: whether it is a maximum depends on a message not
    yet seen, and a boundary must not move when the transcript grows.
    """
    order = sorted(distances)
    chosen = []
    for n, position in enumerate(order[:-1]):
        value = distances[position]
        if value <= threshold:
            continue
        before = distances[order[n - 1]] if n > 0 else -1.0
        if value > before and value >= distances[order[n + 1]]:
            chosen.append(position)
    return chosen


def segment(messages: Sequence[Message], config: SegmentConfig | None = None,
            embedder: Embedder | None = None) -> list[Segment]:
    """Cut one session's messages into episodes.

    Args:
        messages: the session's messages in order.
        config: boundary rules (default `SegmentConfig()`).
        embedder: used for topic shifts; without one only pauses and markers cut.

    Returns:
        Consecutive `Segment`s covering every message (none when there are no messages).
    """
    config = config or SegmentConfig()
    if not messages:
        return []
    cuts: dict[int, tuple[str, str | None]] = {}
    ending = False
    for i, message in enumerate(messages):
        if i > 0:
            previous = messages[i - 1]
            if (message.timestamp is not None and previous.timestamp is not None
                    and message.timestamp - previous.timestamp > config.pause):
                cuts.setdefault(i, ("pause", None))
        name = start_marker(message)
        if name is not None and i > 0:
            cuts[i] = ("marker", name or None)
        if ending and message.kind != "tool_result" and i > 0:
            cuts.setdefault(i, ("agent" if _after_record(messages, i) else "marker", None))
            ending = False
        if is_end_marker(message):
            ending = True
    first_name = start_marker(messages[0])
    if config.topic_threshold is not None and embedder is not None:
        distances = window_distances(messages, embedder, config.window)
        for position in topic_candidates(distances, config.topic_threshold):
            if position in cuts:
                continue
            last = max((cut for cut in cuts if cut < position), default=0)
            said = sum(1 for m in messages[last:position] if m.conversational and m.text.strip())
            if said >= config.min_messages:
                cuts[position] = ("topic", None)
    starts = sorted(cuts)
    segments = []
    bounds = [0, *starts, len(messages)]
    for n in range(len(bounds) - 1):
        start, end = bounds[n], bounds[n + 1]
        boundary, name = ("start", first_name or None) if start == 0 else cuts[start]
        segments.append(Segment(start, end, boundary, name))
    return segments


def _after_record(messages: Sequence[Message], i: int) -> bool:
    """True when the end marker before message ``i`` was an EpisodeRecord call."""
    for message in reversed(messages[:i]):
        if message.kind == "tool_result":
            continue
        return message.kind == "tool_use"
    return False


__all__ = [
    "EPISODE_MARKER",
    "RECORD_TOOL",
    "Segment",
    "SegmentConfig",
    "TOPIC_MIN_MESSAGES",
    "TOPIC_THRESHOLD",
    "TOPIC_WINDOW",
    "TAGS_MARKER",
    "hinted_tags",
    "is_end_marker",
    "segment",
    "start_marker",
    "topic_candidates",
    "window_distances",
]
