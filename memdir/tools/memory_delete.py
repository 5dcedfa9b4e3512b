"""MemoryDelete: remove one entry for good."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdir.tools.formatting import memory_uri
from memdir.tools.session import Session

if TYPE_CHECKING:
    from memdir.memory import Memory


def memory_delete(memory: Memory, session: Session, file_path: str) -> str:
    """Delete a memory entry for good (wrong, outdated or unneeded); links to it go with it.

    Args:
        file_path: the entry.

    Returns:
        ``Deleted memory://PATH``, and the entries whose links to it were removed.
    """
    deleted, unlinked = memory.delete_and_unlink(file_path)
    session.tracker.forget(deleted)
    text = f"Deleted {memory_uri(deleted)}"
    if unlinked:
        text += f"\nRemoved the related links to it from: {', '.join(map(memory_uri, unlinked))}"
    return text


__all__ = ["memory_delete"]
