"""MemoryEdit: exact string replacement inside one entry (read-before-edit, never stale)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdir.core.errors import InputValidationError
from memdir.core.paths import normalize_path
from memdir.tools.formatting import memory_uri
from memdir.tools.memory_write import check_content
from memdir.tools.session import Session

if TYPE_CHECKING:
    from memdir.memory import Memory


def memory_edit(
    memory: Memory,
    session: Session,
    file_path: str,
    old_string: str,
    new_string: str,
    replace_all: bool = False,
) -> str:
    """Replace exact text in a memory entry you have read (MemoryRead first); title and metadata stay.

    Args:
        file_path: the entry.
        old_string: the exact text to replace, from MemoryRead's output without line numbers.
        new_string: the replacement.
        replace_all: every occurrence (else ``old_string`` must occur once).

    Returns:
        ``Successfully replaced N occurrence(s) in memory://PATH``.
    """
    logical = normalize_path(file_path)
    tracker = session.tracker
    if not tracker.has_read(logical):
        memory.read(logical)  # an entry that does not exist is "not found", not "read it first"
        raise InputValidationError(
            "Cannot edit memory entry without reading it first.",
            f"You must use MemoryRead on '{memory_uri(logical)}' before editing it. "
            "This ensures you have the current content to match against.",
        )
    if not old_string:
        raise InputValidationError("old_string is required.", "Pass the exact text to replace.")
    if old_string == new_string:
        raise InputValidationError("old_string and new_string must be different. They are currently identical.")

    entry = memory.read(logical)  # EntryNotFoundError when it is gone; follows merge/move stubs
    tracker.ensure_current(logical, entry)
    content = entry.content
    occurrences = content.count(old_string)
    if occurrences == 0:
        raise InputValidationError(
            "old_string not found in memory entry.",
            "Make sure it matches exactly, including all whitespace and indentation.",
        )
    if occurrences > 1 and not replace_all:
        raise InputValidationError(
            f"Found {occurrences} occurrences of old_string.",
            "Either provide more surrounding context to make the match unique, "
            "or use replace_all: true to replace all occurrences.",
        )
    new_content = content.replace(old_string, new_string, -1 if replace_all else 1)
    check_content(new_content, memory.settings.limits.word_limit, before=content)
    result = memory.write(
        entry.path, new_content, title=entry.title, metadata=entry.metadata, expected_content=content
    )

    # The session made this change, so it has seen the new content (under every name it used).
    tracker.register_entry(result.entry)
    if logical != result.entry.path:
        tracker.register_entry(result.entry, as_path=logical)
    replaced = occurrences if replace_all else 1
    return f"Successfully replaced {replaced} occurrence(s) in {memory_uri(result.entry.path)}"


__all__ = ["memory_edit"]
