"""A better episode name and summary from the client's own model, when the client offers sampling.

The episodes code is synchronous and MCP-free: it takes an optional
``summarize(episode) -> (name, summary) | None`` (`memdir.episodes.store.Summarize`). This
module builds one from a plain ``ask(prompt, max_tokens) -> reply text`` callable. The
server wires ``ask`` to MCP sampling (``session.create_message`` run from the worker
thread); when the client does not support sampling, or the call fails, times out or
answers something unreadable, the summarizer returns None and the deterministic
heuristics' name and summary are kept.

Usage (server side)::

    summarize = sampling_summarizer(lambda prompt, max_tokens: ask_client(prompt, max_tokens))
    ingest(memory, transcript_path, summarize=summarize)
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable

from memdir.episodes.heuristics import clip_words
from memdir.episodes.model import Episode
from memdir.episodes.store import Summarize

log = logging.getLogger(__name__)

Ask = Callable[[str, int], "str | None"]
PROMPT_CHARS = 6000
MESSAGE_CHARS = 400

SYSTEM_HINT = (
    "You name and summarise one episode of an agent's work for its long-term memory. "
    "Answer with exactly two lines:\nNAME: <a task name of at most 8 words>\n"
    "SUMMARY: <at most 60 words: what was asked, what was done or found, how it ended>"
)
_NAME = re.compile(r"^\s*\**name\**\s*[:\-]\s*(?P<value>.+)$", re.IGNORECASE | re.MULTILINE)
_SUMMARY = re.compile(r"^\s*\**summary\**\s*[:\-]\s*(?P<value>.+?)(?=^\s*\**name\**\s*[:\-]|\Z)",
                      re.IGNORECASE | re.MULTILINE | re.DOTALL)


def build_prompt(episode: Episode, max_chars: int = PROMPT_CHARS) -> str:
    """The request sent to the client's model: instructions, known facts and the episode's messages (capped)."""
    head = [SYSTEM_HINT, "", f"Outcome (already classified): {episode.outcome}"]
    if episode.tags:
        head.append(f"Tags: {', '.join(episode.tags)}")
    head += ["", "Messages:"]
    budget = max_chars - sum(len(line) + 1 for line in head)
    lines: list[str] = []
    for message in episode.messages:
        line = f"[{message.who}] {' '.join(message.text.split())[:MESSAGE_CHARS]}"
        if budget - len(line) - 1 < 0:
            lines.append("[…] (later messages left out)")
            break
        lines.append(line)
        budget -= len(line) + 1
    return "\n".join(head + lines)


def parse_reply(text: str | None) -> tuple[str, str] | None:
    """``NAME: …`` / ``SUMMARY: …`` lines (or JSON ``{"name", "summary"}``) → (name, summary); None if unreadable."""
    if not text or not text.strip():
        return None
    stripped = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("name"), str) and isinstance(data.get("summary"), str):
            name, summary = data["name"].strip(), data["summary"].strip()
            return (clip_words(name, 12), clip_words(summary, 90)) if name and summary else None
    name, summary = _NAME.search(text), _SUMMARY.search(text)
    if not name or not summary:
        return None
    clean_name = name.group("value").strip().strip("*\"'` ")
    clean_summary = " ".join(summary.group("value").split()).strip("*\"'` ")
    if not clean_name or not clean_summary:
        return None
    return clip_words(clean_name, 12), clip_words(clean_summary, 90)


def sampling_summarizer(ask: Ask, *, max_tokens: int = 300) -> Summarize:
    """A `Summarize` that asks the client's model through ``ask``; None (heuristics kept) on any failure."""

    def summarize(episode: Episode) -> tuple[str, str] | None:
        try:
            reply = ask(build_prompt(episode), max_tokens)
        except Exception:  # no sampling support, a refusal or a timeout: fall back quietly
            log.info("sampling is unavailable; keeping the heuristic episode name and summary", exc_info=True)
            return None
        return parse_reply(reply)

    return summarize


__all__ = ["Ask", "build_prompt", "parse_reply", "sampling_summarizer"]
