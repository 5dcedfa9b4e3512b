"""Compaction: compressible working-flow chunks, once there are enough, become one summary chunk.

Compaction changes what the virtual and fragment strategies show, never what can be found:
the replaced chunks stay in the state's archive (and in the log), the summary names their
chunk ids, the semantic strategy ranks the original turns, and referencing the summary
(``@@ref('c41')@@``) brings them back verbatim.

What may be compacted: working-flow chunks of a compressible retention class, outside the
most recent ``thread_compact_keep_recent`` chunks, and less important than the
virtual strategy's pin threshold (those stay verbatim; a message that says "remember …" or
"we decided …" is that important unless its importance was given). Critical chunks never
are. A tool call and its result go together or not at all: if either may not be
compacted, or the call has no result yet, neither is.

The summary comes from the client's model when the caller passes ``summarize`` (MCP
sampling); when it does not, or the model fails or answers nothing, a deterministic
extractive summary is written instead. Either way the result is one BATCH_REPLACE event
in the log that holds the summary's text and its parents' ids, so replaying the log gives
the same state without asking any model again.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memdir.core.settings import Settings
from memdir.core.units import CHARS_PER_TOKEN
from memdir.threads.model import WORKING_FLOW, Chunk, ThreadState
from memdir.threads.reducers import Event

log = logging.getLogger(__name__)

Summarize = Callable[[Sequence[Chunk]], "str | None"]
"""Asks a model for a summary of the chunks; None (or an exception) keeps the extractive one."""
Ask = Callable[[str, int], "str | None"]
"""``ask(prompt, max_tokens) -> reply``: the client's model through MCP sampling (wired by the server)."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
SUMMARY_LINE_WORDS = 30
MIN_SUMMARY_TOKENS = 40


@dataclass(frozen=True)
class Plan:
    """The chunks one compaction replaces, in thread order."""

    chunks: tuple[Chunk, ...]

    @property
    def tokens(self) -> int:
        return sum(chunk.tokens for chunk in self.chunks)


def plan(state: ThreadState, settings: Settings) -> Plan:
    """The chunks compaction may replace now (possibly none)."""
    return Candidates(settings).plan(state)


class Candidates:
    """`plan` for one thread as it grows: what the last state's check learnt is kept, so checking after an append
    looks at the chunks since the last compaction, not at the whole thread.

    The chunks before ``settled`` stay as they are when the thread only grows and is
    compacted: each is never compacted (a summary, a critical or pinned chunk, a tool
    exchange with such a part; their call ids are in ``blocked``) or is a tool call still
    waiting for its result (kept in ``waiting``). A state whose first ``settled`` chunks are
    not the very ones seen last time (an operation other than growing and compacting
    changed them), or that shrank so far that some of them are recent again, is checked
    from the start. Safe to share between threads.
    """

    def __init__(self, settings: Settings) -> None:
        self.keep = max(settings.threads.compact_keep_recent, 0)
        self.pin = settings.threads.pin_importance
        self._guard = threading.Lock()
        self._seen: tuple[Chunk, ...] = ()
        self._settled = 0
        self._waiting: list[Chunk] = []
        self._blocked: set[str] = set()

    def _eligible(self, chunk: Chunk) -> bool:
        return chunk.compressible and chunk.importance < self.pin

    def plan(self, state: ThreadState) -> Plan:
        chunks = state.chunks
        with self._guard:
            settled, older = self._settled, max(len(chunks) - self.keep, 0)
            if settled > older or chunks[:settled] != self._seen[:settled]:
                settled, self._waiting, self._blocked = 0, [], set()
            tail = chunks[settled:]
            pool = [*self._waiting, *tail]
            eligible = {chunk.id for chunk in self._waiting}
            eligible.update(chunk.id for chunk in tail[: max(older - settled, 0)] if self._eligible(chunk))
            groups: dict[str, list[Chunk]] = defaultdict(list)
            for chunk in pool:
                if chunk.call_id:
                    groups[chunk.call_id].append(chunk)
            answered = set()
            for call_id, members in groups.items():
                ids = [chunk.id for chunk in members]
                if any(chunk.role == "tool" for chunk in members):
                    answered.add(call_id)
                if call_id in self._blocked or call_id not in answered or not all(i in eligible for i in ids):
                    eligible.difference_update(ids)  # never separate a tool call from its result, nor fold a waiting call
            found = Plan(tuple(chunk for chunk in pool if chunk.id in eligible))
            self._settle(chunks, settled, older, answered)
            return found

    def _settle(self, chunks: tuple[Chunk, ...], settled: int, older: int, answered: set[str]) -> None:
        """Move ``settled`` past the older chunks that stay (or wait for a result), up to the first that may go."""
        waiting = [chunk for chunk in self._waiting if chunk.call_id not in answered]
        if len(waiting) < len(self._waiting):  # a waiting call got its result: it may go, from its place on
            settled = min(chunks.index(chunk) for chunk in self._waiting if chunk.call_id in answered)
            self._waiting = [chunk for chunk in self._waiting if chunks.index(chunk) < settled]
        while settled < older:
            chunk = chunks[settled]
            if not self._eligible(chunk) or chunk.call_id in self._blocked:
                if chunk.call_id:
                    self._blocked.add(chunk.call_id)
            elif chunk.call_id and chunk.call_id not in answered:
                self._waiting.append(chunk)
            else:
                break
            settled += 1
        self._settled, self._seen = settled, chunks


def due(candidates: Plan, settings: Settings) -> bool:
    """True when the compressible chunks pass the count or token threshold."""
    if len(candidates.chunks) < 2:
        return False
    by_count = settings.threads.compact_chunks > 0 and len(candidates.chunks) >= settings.threads.compact_chunks
    by_tokens = settings.threads.compact_tokens > 0 and candidates.tokens >= settings.threads.compact_tokens
    return by_count or by_tokens


def first_sentence(text: str, max_words: int = SUMMARY_LINE_WORDS) -> str:
    """The first sentence of ``text``, at most ``max_words`` words, on one line."""
    flat = " ".join(text[: max_words * 40].split())  # a sentence of max_words words fits: no need to split it all
    sentence = _SENTENCE_END.split(flat, maxsplit=1)[0]
    words = sentence.split()
    return " ".join(words[:max_words]) + (" …" if len(words) > max_words else "")


def extractive_summary(chunks: Sequence[Chunk], max_tokens: int) -> str:
    """A deterministic summary: the most important chunks' first sentences, in thread order, within ``max_tokens``."""
    if not chunks:
        return ""
    head = f"Summary of {len(chunks)} earlier messages ({chunks[0].id}–{chunks[-1].id}):"
    lines = {chunk.id: f"- {chunk.id} {chunk.role}: {first_sentence(chunk.content)}" for chunk in chunks if chunk.content.strip()}
    budget = max_tokens * CHARS_PER_TOKEN - len(head) - 1
    ranked = sorted((pair for pair in enumerate(chunks) if pair[1].id in lines), key=lambda p: (-p[1].importance, p[0]))
    chosen: set[str] = set()
    for _, chunk in ranked:
        cost = len(lines[chunk.id]) + 1
        if cost <= budget:
            chosen.add(chunk.id)
            budget -= cost
    body = [lines[chunk.id] for chunk in chunks if chunk.id in chosen]
    return "\n".join([head, *body])


def summary_for(chunks: Sequence[Chunk], settings: Settings, summarize: Summarize | None) -> tuple[str, str]:
    """(summary text, ``"model"`` or ``"extractive"``): the client's model's when it answers, else extractive."""
    if summarize is not None:
        try:
            text = summarize(chunks)
        except Exception:  # sampling is optional: fall back, never fail the compaction
            log.info("the client's model could not summarise; writing an extractive summary", exc_info=True)
            text = None
        if text and text.strip():
            limit = settings.threads.summary_tokens * CHARS_PER_TOKEN
            return text.strip()[:limit], "model"
    # An extract as long as its sources would save nothing: at most a third of them.
    limit = min(settings.threads.summary_tokens, max(sum(chunk.tokens for chunk in chunks) // 3, MIN_SUMMARY_TOKENS))
    return extractive_summary(chunks, limit), "extractive"


def compaction_event(candidates: Plan, summary: str, source: str) -> Callable[[int, str, ThreadState], Event]:
    """The BATCH_REPLACE event (built once its sequence number is known) that swaps the chunks for the summary."""
    ids = [chunk.id for chunk in candidates.chunks]

    def build(seq: int, at: str, _state: ThreadState) -> Event:
        chunk = Chunk(
            id=f"c{seq}", role="assistant", content=summary, chunk_type=WORKING_FLOW, subtype="compacted",
            retention="compressible", importance=max(chunk.importance for chunk in candidates.chunks),
            parents=tuple(ids), at=at,
        )
        return {"seq": seq, "at": at, "op": "BATCH_REPLACE", "ids": ids, "chunk": chunk.to_json(), "summary_by": source}

    return build


def sampling_prompt(chunks: Sequence[Chunk], max_tokens: int, max_chars: int = 12000) -> str:
    """What the client's model is asked: summarise these messages for the agent's working memory."""
    lines = [
        f"Summarise this part of a conversation for an agent's working memory in at most {max_tokens} tokens.",
        "Keep facts, decisions, names, numbers, file paths, errors and open questions; drop pleasantries.",
        "Answer with the summary only.", "", "Messages:",
    ]
    budget = max_chars - sum(len(line) + 1 for line in lines)
    for chunk in chunks:
        line = f"[{chunk.id} {chunk.role}] {' '.join(chunk.content.split())[:1500]}"
        if len(line) + 1 > budget:
            lines.append("[…] (later messages left out)")
            break
        lines.append(line)
        budget -= len(line) + 1
    return "\n".join(lines)


def sampling_summarizer(ask: Ask, settings: Settings) -> Summarize:
    """A `Summarize` that asks the client's model (``ask``) for the summary."""

    def summarize(chunks: Sequence[Chunk]) -> str | None:
        return ask(sampling_prompt(chunks, settings.threads.summary_tokens), settings.threads.summary_tokens)

    return summarize


__all__ = [
    "Ask", "Candidates", "Plan", "sampling_summarizer", "Summarize", "compaction_event", "due", "extractive_summary", "first_sentence", "plan",
    "sampling_prompt", "summary_for",
]
