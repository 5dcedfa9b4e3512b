"""MemoryWrite: store one small, typed memory entry (and point out near-duplicates)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memdir.core.entry import CONFIDENCE_LEVELS, ENTRY_TYPES, Entry, Metadata
from memdir.core.errors import InputValidationError, InvalidPathError
from memdir.core.identity import KINDS, check_kind
from memdir.core.paths import has_control_char, normalize_path
from memdir.core.units import count_words
from memdir.core.user_regex import RegexBudget
from memdir.search.similarity import jaccard, word_set
from memdir.tools.formatting import human_size, memory_uri, system_reminder, with_title
from memdir.tools.params import coerce_dict, coerce_str_list
from memdir.tools.session import Session
from memdir.workspace.tools import check_skill_permissions

if TYPE_CHECKING:
    from memdir.memory import Memory

# Near-duplicate report after a write (never acted on: nothing is merged automatically).
DUPLICATE_CANDIDATES = 10  # keyword-search candidates checked when there is no embedding


CHOICES = {"type": ENTRY_TYPES, "confidence": CONFIDENCE_LEVELS, "kind": KINDS}
"""Parameters with a fixed set of values: the server lists them in the tool's input schema."""


def memory_write(
    memory: Memory,
    session: Session,
    file_path: str,
    content: str,
    title: str,
    type: str,  # noqa: A002 - the parameter name the model sees
    tags: list[str] | str | None,
    related: list[str] | str | None,
    domain: str | None,
    confidence: str | None = "medium",
    source: str | None = "user",
    tools: list[str] | str | None = None,
    permissions: dict[str, Any] | str | None = None,
    kind: str | None = None,
) -> str:
    """Store a memory entry (markdown, at most 250 words) to remember across conversations.

    Types: concept (an idea), fact, skill (a procedure), experience (a lesson). One topic per entry;
    an existing path is replaced. Prefer MemoryEdit on a similar entry the reply lists to a duplicate.

    Args:
        file_path: ``<type>/<folder>/<name>.md``, e.g. ``fact/people/ana.md``.
        content: markdown, no frontmatter.
        title: a short descriptive title.
        type: must match the path's first folder.
        tags: search keywords; be generous.
        related: paths of related entries.
        domain: a category, e.g. ``programming/ruby``.
        confidence: how sure you are.
        source: where it came from, e.g. ``user``.
        tools: skills only: the tools it needs.
        permissions: skills only, e.g. ``{"Bash": {"allowed_commands": ["^pytest"]}}``.
        kind: for agent roles (optional).

    Returns:
        ``Stored at memory://PATH (SIZE)``, plus a note when an entry was replaced and a
        reminder listing up to three near-duplicates.
    """
    check_content(content, memory.settings.limits.word_limit)
    logical = normalize_path(file_path)
    entry_type = _check_type(type, logical)
    if not title or not title.strip():
        raise InputValidationError("title is required.", "Give the entry a brief descriptive title.")
    # One line each: a title with a line break could fake a line of MemoryGlob's listing.
    one_line = [("title", title), ("domain", domain), ("source", source)]
    tag_list = coerce_str_list(tags, "tags")
    one_line += [("tags", tag) for tag in tag_list]
    for name, value in one_line:
        if value and has_control_char(value):
            raise InputValidationError(
                f"{name} contains a line break, control or invisible character: {value!r:.80}.",
                f"Write {name} on one line of plain text.",
            )
    level = (confidence or "medium").strip().lower()
    if level not in CONFIDENCE_LEVELS:
        raise InputValidationError(
            f"confidence must be one of {', '.join(CONFIDENCE_LEVELS)} (got {confidence!r}).",
            "Use 'high' when verified, 'medium' when fairly sure, 'low' when unsure.",
        )
    skill_tools = coerce_str_list(tools, "tools")
    skill_permissions = coerce_dict(permissions, "permissions")
    if entry_type != "skill" and (skill_tools or skill_permissions):
        raise InputValidationError(
            f"tools and permissions only apply to skills, and this entry has type '{entry_type}'.",
            "Leave tools and permissions out, or store the entry as a skill under skill/.",
        )
    check_skill_permissions(skill_permissions, RegexBudget.from_settings(memory.settings))  # refused now, not when someone loads the skill
    metadata = Metadata(
        type=entry_type,
        confidence=level,
        tags=tag_list,
        related=_related_uris(related, logical),
        domain=(domain or "").strip() or None,
        source=(source or "user").strip() or "user",
        tools=skill_tools,
        permissions=skill_permissions,
        kind=check_kind(kind),
    )

    result = memory.write(logical, content, title=title.strip(), metadata=metadata)
    entry = result.entry
    if session.tracker.has_read(entry.path):
        # The session wrote this content itself, so it has "seen" it: a later edit is not stale.
        session.tracker.register_entry(entry)

    text = f"Stored at {memory_uri(entry.path)} ({human_size(entry.size)})"
    if result.overwritten:
        text += " — replaced the existing entry."
    duplicates = near_duplicates(memory, entry)
    if duplicates:
        lines = ["Similar entries already exist:"]
        lines += [f"- {with_title(path, title)} ({round(score * 100)}% similar)" for path, title, score in duplicates]
        lines.append("Consider MemoryEdit on one of them instead of keeping duplicates.")
        text += "\n\n" + system_reminder(*lines)
    return text


def check_content(content: str, word_limit: int, *, before: str | None = None) -> None:
    """What any entry's content must be (SwarmMemory's word limit, not empty): for writes and edits alike.

    ``before``: the content an edit starts from. An entry already over the limit (written
    before the limit, or by hand) may still be edited, as long as the edit does not add words.
    """
    words = count_words(content)
    if words > word_limit and (before is None or words > count_words(before)):
        raise InputValidationError(
            f"Content exceeds {word_limit}-word limit ({words} words).",
            "Extract key entities and split into multiple memories.",
        )
    if not content.strip():
        raise InputValidationError("content is empty.", "Write the markdown text to remember in content.")


def _check_type(entry_type: str, logical: str) -> str:
    value = (entry_type or "").strip().lower()
    if value not in ENTRY_TYPES:
        raise InputValidationError(
            f"type must be one of {', '.join(ENTRY_TYPES)} (got {entry_type!r}).",
            "concept: an abstract idea; fact: concrete information; skill: a procedure; experience: a lesson learned.",
        )
    if not logical.startswith(value + "/"):
        first, _, rest = logical.partition("/")
        suggestion = f"{value}/{rest if first in ENTRY_TYPES and rest else logical}"
        raise InputValidationError(
            f"Entries of type '{value}' must be stored under {value}/, but the path is '{logical}'.",
            f"Memory has exactly 4 top-level folders (concept/, fact/, skill/, experience/); "
            f"use a path such as '{suggestion}'.",
        )
    return value


def _related_uris(related: list[str] | str | None, own_path: str) -> list[str]:
    uris: list[str] = []
    for item in coerce_str_list(related, "related"):
        try:
            logical = normalize_path(item)
        except InvalidPathError as exc:
            raise InputValidationError(
                f"related contains an invalid memory path {item!r}: {exc.message}",
                "List related entries as memory:// paths, e.g. 'memory://concept/ruby/modules.md'.",
            ) from exc
        uri = memory_uri(logical)
        if logical != own_path and uri not in uris:
            uris.append(uri)
    return uris


# ---------------------------------------------------------------------------------------- near-duplicates
def near_duplicates(memory: Memory, entry: Entry, limit: int | None = None) -> list[tuple[str, str, float]]:
    """Existing entries that look like duplicates of ``entry``, which the caller has just written:
    ``(path, title, similarity)``, best first.

    With an embedding, the cosine of the stored vectors (>= ``Settings.duplicate_cosine``);
    without one (model missing or still loading), the word Jaccard of the contents of the
    best keyword-search candidates (>= ``Settings.duplicate_jaccard``). At most ``limit``
    (``Settings.duplicates_shown``). Failures here never fail the write.
    """
    if limit is None:
        limit = memory.settings.search.duplicates_shown
    try:
        found = _by_cosine(memory, entry) if entry.embedding is not None else None
        if found is None:
            found = _by_jaccard(memory, entry)
    except Exception:  # the write itself succeeded; a broken index must not turn it into an error
        return []
    found = found[:limit]
    titles = memory.titles(path for path, _ in found)
    return [(path, titles.get(path, ""), score) for path, score in found]


def _by_cosine(memory: Memory, entry: Entry) -> list[tuple[str, float]] | None:
    """The nearest neighbours the index finds for the entry's vector (one more than shown: the
    entry itself is among them) at or above ``Settings.duplicate_cosine``; None when nothing
    embedded by the current model is comparable."""
    if entry.embedding is None:
        return None  # not embedded (no model yet): fall back to words
    nearest = memory.nearest(entry.embedding, memory.settings.search.duplicates_shown + 1, caught_up=True)
    if not nearest:
        return None  # nothing embedded yet, or vectors of another model: fall back to words
    return [
        (path, min(1.0, score)) for path, score in nearest
        if path != entry.path and score >= memory.settings.search.duplicate_cosine
    ]


def _by_jaccard(memory: Memory, entry: Entry) -> list[tuple[str, float]]:
    words = word_set(entry.content)
    if not words:
        return []
    candidates = memory.search(f"{entry.title}\n{entry.content}", top_k=DUPLICATE_CANDIDATES, threshold=0.0)
    found: list[tuple[str, float]] = []
    for candidate in candidates:
        if candidate.path == entry.path:
            continue
        try:
            other = memory.read(candidate.path)
        except Exception:  # deleted meanwhile
            continue
        if other.path == entry.path:
            continue
        score = jaccard(words, word_set(other.content))
        if score >= memory.settings.search.duplicate_jaccard:
            found.append((other.path, score))
    return sorted(found, key=lambda item: item[1], reverse=True)


__all__ = ["CHOICES", "check_content", "memory_write", "near_duplicates"]
