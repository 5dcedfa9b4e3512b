"""MemoryRead: show one entry with line numbers, and point at its related entries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdir.core.entry import Entry
from memdir.core.errors import InvalidPathError
from memdir.core.links import related_links
from memdir.core.paths import normalize_path
from memdir.tools.formatting import memory_uri, numbered_lines, system_reminder, with_title
from memdir.tools.session import Session

if TYPE_CHECKING:
    from memdir.memory import Memory


def memory_read(memory: Memory, session: Session, file_path: str) -> str:
    """Read a memory entry: its lines numbered, then its related entries. MemoryEdit needs this first.

    Args:
        file_path: e.g. ``concept/ruby/classes.md``.

    Returns:
        Each line as ``     N line`` (6-wide number, a space, the line), then a
        ``<system-reminder>`` listing related memories when there are any.
    """
    logical = normalize_path(file_path)
    entry = memory.read(logical, count_hit=True)
    for via in session.tracker.take_offers(logical):  # shown through a link: it was followed
        memory.record_traversal(via, entry.path)
    session.tracker.register_entry(entry)
    if entry.path != logical:  # reached through a merge/move stub: the old path works for edits too
        session.tracker.register_entry(entry, as_path=logical)

    text = numbered_lines(entry.content)
    if not entry.content:
        text = system_reminder(f"{memory_uri(entry.path)} exists but its content is empty.")
    if entry.path != logical:
        redirect = memory.redirect_of(logical)
        how = f"was {redirect.kind} into" if redirect and redirect.kind == "merged" else "has moved to"
        text += "\n\n" + system_reminder(
            f"{memory_uri(logical)} {how} {memory_uri(entry.path)}; the content above is from "
            f"{memory_uri(entry.path)}. Use that path from now on."
        )
    related = related_lines(memory, entry.metadata.related)
    typed = typed_link_lines(memory, entry)
    if related or typed:
        text += "\n\n" + system_reminder("Related memories that may provide additional context:", *related, *typed)
    for link in entry.metadata.all_links:
        session.tracker.offer(link.target, entry.path)
    return text


def typed_link_lines(memory: Memory, entry: Entry) -> list[str]:
    """``- memory://path "Title" (extends)`` for each typed link not already shown as a ``related`` path."""
    shown = {link.key for link in related_links(entry.metadata.related)}
    links = [link for link in entry.metadata.links if link.key not in shown]
    titles = memory.titles(link.target for link in links)
    return [f"- {with_title(link.target, titles.get(link.target))} ({link.kind})" for link in links]


def related_lines(memory: Memory, related: list[str]) -> list[str]:
    """``- memory://path "Title"`` for each related path (path alone when the title is unknown)."""
    paths: list[str] = []
    for item in related:
        try:
            paths.append(normalize_path(item))
        except InvalidPathError:  # a hand-edited .yml: show what is there
            paths.append(item.strip())
    titles = memory.titles(paths)
    return [f"- {with_title(path, titles.get(path))}" for path in dict.fromkeys(paths) if path]


__all__ = ["memory_read", "related_lines", "typed_link_lines"]
