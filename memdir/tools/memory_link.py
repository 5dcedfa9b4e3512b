"""MemoryLink and MemoryUnlink: make and remove typed links between entries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdir.core.paths import normalize_path
from memdir.tools.formatting import memory_uri

if TYPE_CHECKING:
    from memdir.memory import Memory


def memory_link(memory: Memory, source: str, target: str, kind: str = "references", strength: float = 1.0) -> str:
    """Link one memory entry to another with a typed link (stored in the source's metadata).

    Use it when an entry builds on, implements, contradicts, replaces or refers to another, so
    that MemoryGraph shows it and search can follow it. Linking the same two entries by the
    same kind again replaces that link (e.g. to change its strength).

    Args:
        source: the entry the link starts from, e.g. ``concept/http/retries.md``.
        target: the entry it points to (must exist).
        kind: ``extends``, ``contradicts``, ``implements``, ``references`` (default) or ``supersedes``
            (the source replaces the target).
        strength: how strong the link is, from 0 to 1 (default 1.0).

    Returns:
        ``Linked memory://source —kind 1.00→ memory://target``.
    """
    link = memory.link(source, target, kind, strength)
    return f"Linked {memory_uri(normalize_path(source))} —{link.kind} {link.strength:.2f}→ {memory_uri(link.target)}"


def memory_unlink(memory: Memory, source: str, target: str, kind: str | None = None) -> str:
    """Remove the links from one memory entry to another (of one kind, or all of them).

    Args:
        source: the entry holding the link.
        target: the entry it points to.
        kind: only links of this kind (``extends``, ``contradicts``, ``implements``, ``references``,
            ``supersedes``); leave it out to remove every link between them.

    Returns:
        ``Removed N link(s) from memory://source to memory://target: kinds``.
    """
    removed = memory.unlink(source, target, kind)
    kinds = ", ".join(sorted({link.kind for link in removed}))
    return (f"Removed {len(removed)} link{'s' if len(removed) != 1 else ''} from {memory_uri(normalize_path(source))} "
            f"to {memory_uri(removed[0].target)}: {kinds}")


__all__ = ["memory_link", "memory_unlink"]
