"""Per-message discovery: the skills and memories that may help with what the user just said.

SwarmMemory ran two searches on every user message — skills (type ``skill``) and memories
(``concept``, ``fact``, ``experience``), top 3 each, with its adaptive threshold (short
messages get the lower one) — and injected two ``<system-reminder>`` blocks. memdir keeps
the skills' format; the memories' says each entry in one line (title, type, match, path)
and how to read one once, and holds as many lines as fit in a byte budget
(``discovery_reminder_bytes``, 660: the size of SwarmMemory's reminder of four entries),
at most ``discovery_top_k`` (10): ten untitled entries, fewer titled ones, whose lines are
longer. The answer is more often among them, and an agent reads only the ones it needs.
It adds guards:

* thresholds and the "% match" apply to each hit's absolute ``relevance`` (half cosine,
  half the idf-weighted share of the message's keywords found), not to the search score,
  whose BM25 part is relative to the message's best keyword hit and so calls the best of
  any unrelated entries a strong match (see `memdir.search.hybrid`); the hits that pass
  are shown most relevant first (``discovery_rank_by``), the memories within the byte budget,
  at most ``discovery_top_k_skills`` (4) skills;
* a relevance floor (``Settings.discovery_min_score``): nothing weaker is ever shown,
  whatever the thresholds are configured to;
* a message's `Gate`: when it names someone or something (a capitalised word inside a
  sentence, ``Settings.discovery_names_required``; a month or a weekday is a time, not a
  name) that the store knows, a hit must mention one of those names (chit-chat about
  Caroline is not about Melanie), and, the name having narrowed the field, a hit needs only
  the short-message threshold, however long the message. A name the store has never seen
  is a word no entry holds: it counts for nothing, neither for a hit nor against all of
  them ("ask Bob about the ledger decision" gets the ledger entries), and the rest of the
  message must carry the match, at the full (long-message) threshold;
* a message that says fewer than ``discovery_min_content_words`` (3) words the store could
  match — "thanks!", "hello test", or a question whose only other word is a name it never
  saw — gets only entries whose title, tags or path name one of them: one or two words
  match something in any store, a pleasantry most of all. When one of its words is a name
  the store knows ("What did Priya research?"), an entry holding every one of its words
  names them too;
* a token budget (``Settings.discovery_token_budget``, ~4 characters per token): the
  weakest results are dropped until the reminders fit.

While the model is not ready (it loads in a server's first seconds: a search waits up to
``search_model_wait`` for it; or none is installed) search is keyword-only, and its relevance is the share of the message's words an entry holds: "100%"
there means "has every word", not "means the same". Such hits say "keyword match" instead
of a percentage, and the reminder says that search was keyword-only.

When nothing is relevant the result is the empty string, and callers show nothing at all.
Used by `memdir discover` (the Claude Code hook), the MCP discovery prompt and the
read-only discovery tool. No MCP imports.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memdir.core.entry import EPISODES_PREFIX
from memdir.core.identity import view_filter
from memdir.core.keywords import (
    STOP_WORDS,
    keyword_terms,
    names_any,
    porter_stem,
    short_message_terms,
    words,
)
from memdir.core.settings import Settings
from memdir.core.units import estimate_tokens
from memdir.search.thresholds import relevance_needed

if TYPE_CHECKING:
    from memdir.memory import Memory

SKILL_TYPES = ("skill",)
MEMORY_TYPES = ("concept", "fact", "experience")
TYPE_ICONS = {"concept": "💡", "fact": "📋", "experience": "🔍"}


@dataclass(frozen=True, slots=True)
class Found:
    """One search hit as the reminders show it."""

    path: str
    title: str
    type: str
    score: float
    keyword_only: bool = False

    @property
    def percent(self) -> int:
        return round(self.score * 100)

    @property
    def strength(self) -> str:
        """``82% match`` on the semantic scale; ``keyword match`` when no model took part."""
        return "keyword match" if self.keyword_only else f"{self.percent}% match"


KEYWORD_ONLY_NOTE = "(Semantic search is not available right now: these were matched by their words, not by meaning.)"


def _keyword_note(found: Sequence[Found]) -> list[str]:
    return [KEYWORD_ONLY_NOTE] if any(item.keyword_only for item in found) else []


def skill_reminder(skills: Sequence[Found]) -> str:
    """SwarmMemory's 🎯 reminder for skills (empty string when there are none)."""
    if not skills:
        return ""
    lines = ["<system-reminder>", f"🎯 Found {len(skills)} skill(s) in memory that may be relevant:", ""]
    for skill in skills:
        lines += [
            f"**{skill.title}** ({skill.strength})",
            f"Path: `{skill.path}`",
            f'To use: `LoadSkill(file_path: "{skill.path}")`',
            "",
        ]
    lines += [
        *_keyword_note(skills),
        "If a skill matches your task: Load it to get instructions.",
        "If none match: Ignore and proceed normally.",
        "</system-reminder>",
    ]
    return "\n".join(lines)


def memory_reminder(memories: Sequence[Found]) -> str:
    """SwarmMemory's 📚 reminder for concept/fact/experience entries, a line each (empty when none).

    An entry without a title of its own (its title is its path) is named by its path alone.
    """
    if not memories:
        return ""
    lines = ["<system-reminder>", f"📚 Found {len(memories)} memory entries that may provide context:", ""]
    for memory in memories:
        icon = TYPE_ICONS.get(memory.type, "📄")
        name = "" if memory.title == memory.path else f"**{memory.title}** "
        lines.append(f"{icon} {name}`{memory.path}` ({memory.type}, {memory.strength})")
    lines += ["", *_keyword_note(memories), 'Read one with `MemoryRead(file_path: "<path>")`. '
              "These entries may contain relevant knowledge for your task."]
    lines.append("</system-reminder>")
    return "\n".join(lines)


def fit_bytes(memories: Sequence[Found], budget: int) -> list[Found]:
    """The first of ``memories`` (in the order shown) whose reminder takes at most ``budget`` bytes.

    The first one stays, however long its title; a budget of 0 or less keeps them all.
    """
    shown = list(memories)
    while budget > 0 and len(shown) > 1 and len(memory_reminder(shown).encode()) > budget:
        shown.pop()
    return shown


def render(skills: Sequence[Found], memories: Sequence[Found], token_budget: int | None = None) -> str:
    """Both reminders (skills first), dropping the weakest results until they fit ``token_budget``."""
    skills, memories = list(skills), list(memories)
    while True:
        text = "\n\n".join(part for part in (skill_reminder(skills), memory_reminder(memories)) if part)
        if token_budget is None or token_budget <= 0 or estimate_tokens(text) <= token_budget:
            return text
        if not skills and not memories:
            return ""
        weakest_skill = min(skills, key=lambda f: f.score) if skills else None
        weakest_memory = min(memories, key=lambda f: f.score) if memories else None
        if weakest_skill is not None and (weakest_memory is None or weakest_skill.score < weakest_memory.score):
            skills.remove(weakest_skill)
        elif weakest_memory is not None:
            memories.remove(weakest_memory)


def _found(result: Any) -> Found:
    path = str(result.path)
    entry_type = getattr(result, "type", None) or path.split("/", 1)[0]
    title = str(getattr(result, "title", "") or path)
    keyword_only = getattr(result, "mode", "") == "keyword"
    return Found(path=path, title=title, type=str(entry_type), score=float(result.relevance), keyword_only=keyword_only)


_CAPITALISED = re.compile(r"(?<![\w'’-])[A-Z][a-z][\w'’-]*")
_SENTENCE_ENDS = frozenset(".!?:;")
_TIME_WORDS = frozenset(porter_stem(word) for word in (
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday"
).split())
"""Months and weekdays: capitalised inside a sentence, yet times, not names ("in June")."""


def names_in(message: str) -> set[str]:
    """The keyword terms (Porter stems) of the capitalised words inside the message's sentences.

    A capitalised word that opens a sentence says nothing (every sentence starts with
    one); inside a sentence it is a name: a person, a place, a product. "I" is not one,
    nor is an acronym ("CI", "API"): a technical term the store may simply not use; nor a
    month or a weekday: a time, which entries rarely spell as the message does.
    """
    found: set[str] = set()
    for match in _CAPITALISED.finditer(message):
        if _opens_sentence(message, match.start()):
            continue
        for word in words(match.group())[:1]:
            if len(word) >= 2 and word not in STOP_WORDS:
                found.add(porter_stem(word))
    return found - _TIME_WORDS


def _opens_sentence(message: str, start: int) -> bool:
    """True if the word at ``start`` opens the message, a line, or a sentence (after ``.!?:;`` and a space).

    Looks back over the whitespace before the word only, so a message costs time in
    proportion to its length (testing each word's whole prefix made long prompts quadratic).
    """
    at = start - 1
    while at >= 0 and message[at].isspace():
        if message[at] == "\n":
            return True
        at -= 1
    if at < 0:
        return start == 0
    return at < start - 1 and message[at] in _SENTENCE_ENDS


@dataclass(frozen=True, slots=True)
class Gate:
    """What a message lets through, worked out once per message (see the module docstring).

    Attributes:
        known: the message's names the store knows (Porter stems): a hit must mention one.
        must_name: for a message that says fewer than ``discovery_min_content_words``
            words the store could match (a name it has never seen does not count), those
            words: a hit's title, tags or path must name one. None for a longer message.
        threshold: the relevance a hit needs: the adaptive threshold, never below the
            floor; a message naming someone or something the store has never seen gets
            the full (long-message) threshold: its hits must stand on the rest of it.
        named_threshold: the relevance a hit that mentions one of the ``known`` names
            needs: for a message naming only what the store knows, the short-message
            threshold (the name has narrowed the field); else ``threshold``. Episodes,
            which need not mention the name, are held to ``threshold``.
    """

    known: frozenset[str] = frozenset()
    must_name: frozenset[str] | None = None
    threshold: float = 0.0
    named_threshold: float = 0.0

    @classmethod
    def of(cls, memory: Memory, message: str, settings: Settings) -> Gate:
        names = names_in(message) if settings.discovery.names_required else set()
        # (with the words its searches ask about: inside a reading, one statement reads them all)
        counts = memory.document_frequencies([*names, *keyword_terms(message)]) if names else {}
        known = {name for name in names if counts.get(name)}
        short = short_message_terms(message, settings.discovery.min_content_words, names - known)
        threshold = relevance_needed(settings.discovery, message)
        if names - known:
            threshold = max(threshold, settings.discovery.threshold)
        named = threshold
        if known and not names - known:
            named = max(min(threshold, settings.discovery.threshold_short), settings.discovery.min_score)
        return cls(frozenset(known), None if short is None else frozenset(short), threshold, named)

    def allows(self, result: Any) -> bool:
        if self.known and self.known.isdisjoint(result.matched):
            return False
        if self.must_name is None or (self.known and self.must_name.issubset(result.matched)):
            return True
        return names_any(set(self.must_name), result.title, result.path, *result.tags)


MAX_POOL = 24
"""Most search results one discovery search looks at."""


def search_found(
    memory: Memory, message: str, types: Sequence[str], settings: Settings, *, limit: int,
    exclude_prefix: str | None = None, view_all: bool = False, gate: Gate | None = None,
) -> list[Found]:
    """The ``limit`` top results of one discovery search that the message's `Gate` lets through,
    above both the adaptive threshold and the floor.

    ``exclude_prefix`` leaves out a folder that has a reminder of its own (episodes); the
    memory's actor's role view applies unless ``view_all``.
    """
    gate = gate or Gate.of(memory, message, settings)
    threshold = gate.named_threshold  # every hit the gate lets through mentions a known name, if there is one
    # Ranked by score, kept by relevance. The pool stays at most 24: a larger one made the PostgreSQL
    # store's search read rows in proportion to the store (tests/server/test_rows_read.py).
    pool = min(limit * (8 if exclude_prefix else 4), MAX_POOL)
    results = memory.search(message, top_k=pool, types=list(types), view=view_filter(memory.actor, view_all))
    found = [_found(result) for result in results if gate.allows(result)]
    relevant = [
        item for item in found
        if item.score >= threshold and item.type in types and not (exclude_prefix and item.path.startswith(exclude_prefix))
    ]
    if settings.discovery.rank_by == "relevance":
        relevant.sort(key=lambda item: -item.score)  # stable: equal relevance keeps the search order
    return relevant[:limit]


def discover(
    memory: Memory, message: str, settings: Settings | None = None, *, include_skills: bool = True, view_all: bool = False
) -> str:
    """The discovery reminders for a user's message, or ``""`` when nothing is relevant.

    Args:
        memory: the open memory root.
        message: the user's message, as typed.
        settings: limits and thresholds (default: the memory's own settings).
        include_skills: False leaves the skills reminder out (retrieval mode has no LoadSkill).
        view_all: also entries outside the role's view (`memdir.core.identity.Actor.sees`).
    """
    settings = settings or memory.settings
    if not message or not message.strip():
        return ""
    with memory.reading(one_query=True, query=message):  # one snapshot: statistics read once for the gate and both searches, one walk
        gate = Gate.of(memory, message, settings)
        skills = search_found(memory, message, SKILL_TYPES, settings, limit=settings.discovery.top_k_skills,
                              view_all=view_all, gate=gate) if include_skills else []
        memories = fit_bytes(search_found(memory, message, MEMORY_TYPES, settings, limit=settings.discovery.top_k,
                                          exclude_prefix=EPISODES_PREFIX, view_all=view_all, gate=gate),
                             settings.discovery.reminder_bytes)
    text = render(skills, memories, settings.discovery.token_budget)
    # Episodes follow the design's own ranking (importance boost, recency decay, at most N)
    # and get their own reminder, within what is left of the budget. Their package loads only
    # for a store that has some (neither on a server's start-up path nor in a store without).
    if not memory.list_page(None, 1, under=EPISODES_PREFIX).entries:
        return text
    from memdir.episodes.recall import discover_episodes

    episodes = discover_episodes(memory, message, settings=settings, must_name=gate.must_name, threshold=gate.threshold)
    if episodes and estimate_tokens(text) + estimate_tokens(episodes) <= settings.discovery.token_budget:
        text = f"{text}\n\n{episodes}" if text else episodes
    return text


def discover_in_store(settings: Settings, message: str) -> str:
    """`discover` over the store of ``settings``, opened read-only for this one message: a hook's
    answer when no server has the store open (looking changes nothing).

    The model loads on a thread of its own while the store opens (and while `memdir.memory`
    is imported): every search of the message waits for it, as it would have otherwise."""
    from memdir.embeddings.provider import ModelProvider

    model = ModelProvider.from_settings(settings, enabled=settings.embeddings.enabled)
    model.start_background(awaited=True)
    from memdir.memory import Memory

    try:
        memory = Memory.open(settings, read_only=True, model=model)
    except BaseException:
        model.close()  # (the process must not end while the loading thread is inside onnxruntime)
        raise
    with memory:
        return discover(memory, message, settings, include_skills=settings.server.mode != "retrieval")


__all__ = [
    "KEYWORD_ONLY_NOTE",
    "MEMORY_TYPES",
    "SKILL_TYPES",
    "TYPE_ICONS",
    "Found",
    "Gate",
    "discover",
    "discover_in_store",
    "fit_bytes",
    "memory_reminder",
    "names_in",
    "render",
    "search_found",
    "skill_reminder",
]
