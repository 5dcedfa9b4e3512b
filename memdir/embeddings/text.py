"""The text an entry is embedded from (SwarmMemory's "searchable text").

Embedding the whole entry would let a long tail of detail dilute what the entry is
about, and MiniLM reads only its first 256 tokens anyway. SwarmMemory therefore
embedded a short card::

    Title: Ruby classes
    Tags: ruby, oop
    Domain: programming
    Summary: <first paragraph of the content>

Its hash (`text_hash`) is stored beside the vector (in the derived index and the ``.yml``),
so memdir can tell when a vector no longer matches its entry and must be re-embedded:
content edited outside memdir, or a change of the recipe itself — the
``embedding_max_chars`` or ``embedding_summary`` setting or this module's `RECIPE_VERSION`,
which `text_recipe` names so that the index re-hashes every entry when it changes.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memdir.core.entry import Entry

DEFAULT_MAX_CHARS = 1200
RECIPE_VERSION = 1
"""Raise this whenever `searchable_text` changes what it builds: every vector is then checked again."""


def _blocks(content: str, title: str) -> list[list[str]]:
    """The non-empty blocks of ``content`` (lines up to a blank line), stripped; a leading
    markdown heading that merely repeats the title is left out (the title is on the card)."""
    blocks: list[list[str]] = [[]]
    for line in content.replace("\r\n", "\n").split("\n"):
        if line.strip():
            blocks[-1].append(line.strip())
        elif blocks[-1]:
            blocks.append([])
    blocks = [block for block in blocks if block]
    if blocks and title:
        first = blocks[0][0]
        if first.startswith("#") and first.lstrip("#").strip().casefold() == title.strip().casefold():
            blocks[0] = blocks[0][1:]
            if not blocks[0]:
                blocks.pop(0)
    return blocks


def first_paragraph(content: str, title: str = "") -> str:
    """The first non-empty block of ``content`` (lines up to a blank line), joined into one line.

    A leading markdown heading that merely repeats the title is skipped: the title is
    already on the card, and the summary should say something new. A block of headings
    alone (``# Setup`` then a blank line) is not a paragraph: the block after it joins it,
    so the card holds the entry's first real sentences, not just a heading.
    """
    blocks = _blocks(content, title)
    summary = blocks[0] if blocks else []
    if len(blocks) > 1 and all(line.startswith("#") for line in summary):
        summary = summary + blocks[1]  # a heading standing alone: join the block after it, and stop
    return " ".join(summary)


def whole_text(content: str, title: str = "") -> str:
    """Every block of ``content`` joined into one line (the title-repeating heading left out)."""
    return " ".join(line for block in _blocks(content, title) for line in block)


def _metadata_field(metadata: Any, name: str) -> Any:
    if metadata is None:
        return None
    if isinstance(metadata, dict):
        return metadata.get(name)
    return getattr(metadata, name, None)


def searchable_text(
    title: str, metadata: Any, content: str, max_chars: int = DEFAULT_MAX_CHARS, *, summary: str = "first_paragraph"
) -> str:
    """The card an entry is embedded from: title, tags, domain and summary, empty parts left out.

    Args:
        title: the entry's title.
        metadata: a `memdir.core.entry.Metadata` or a plain dict (``tags``, ``domain``).
        content: the markdown content.
        max_chars: cap on the summary's characters; ``-1`` (any negative) means no cap.
        summary: ``first_paragraph`` (SwarmMemory's card) or ``content``: the whole content
            up to ``max_chars``, so that what follows the first paragraph (the message a
            conversation turn answers, a note's second point) is embedded too.
    """
    parts: list[str] = []
    if title and title.strip():
        parts.append(f"Title: {title.strip()}")
    tags = [str(tag).strip() for tag in (_metadata_field(metadata, "tags") or []) if str(tag).strip()]
    if tags:
        parts.append(f"Tags: {', '.join(tags)}")
    domain = _metadata_field(metadata, "domain")
    if domain and str(domain).strip():
        parts.append(f"Domain: {str(domain).strip()}")
    text = whole_text(content, title) if summary == "content" else first_paragraph(content, title)
    if max_chars >= 0:
        text = text[:max_chars].rstrip()
    if text:
        parts.append(f"Summary: {text}")
    return "\n".join(parts)


def text_recipe(max_chars: int, summary: str = "first_paragraph") -> str:
    """The name of the searchable-text recipe in force: its version and the settings it depends on."""
    return f"card-v{RECIPE_VERSION};max_chars={max_chars if max_chars >= 0 else -1};summary={summary}"


def text_hash(text: str) -> str:
    """A short, stable fingerprint of a searchable text (sha256, 16 hex digits)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def entry_text_hash(entry: Entry, max_chars: int, summary: str) -> str:
    """The `text_hash` of an entry's searchable text as ``max_chars`` and ``summary`` make it."""
    return text_hash(searchable_text(entry.title, entry.metadata, entry.content, max_chars, summary=summary))
