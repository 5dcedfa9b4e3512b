"""MemoryLink and MemoryUnlink: make and remove typed links between entries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memdir.core.paths import normalize_path
from memdir.tools.formatting import memory_uri

if TYPE_CHECKING:
    from memdir.memory import Memory


def memory_link(memory: Memory, source: str, target: str, kind: str = "references", strength: float = 1.0) -> str:
    """Link one entry to another: it extends, implements, contradicts, supersedes or references it (again: replaced).

    Args:
        source: the entry the link starts from.
        target: the entry it points to.
        kind: how they relate.
        strength: 0 to 1.

    Returns:
        ``Linked memory://source —kind 1.00→ memory://target``.
    """
    link = memory.link(source, target, kind, strength)
    return f"Linked {memory_uri(normalize_path(source))} —{link.kind} {link.strength:.2f}→ {memory_uri(link.target)}"


def memory_unlink(memory: Memory, source: str, target: str, kind: str | None = None) -> str:
    """Remove the links from one entry to another.

    Args:
        source: the entry holding the link.
        target: the entry it points to.
        kind: only this kind (default: all).

    Returns:
        ``Removed N link(s) from memory://source to memory://target: kinds``.
    """
    removed = memory.unlink(source, target, kind)
    kinds = ", ".join(sorted({link.kind for link in removed}))
    return (f"Removed {len(removed)} link{'s' if len(removed) != 1 else ''} from {memory_uri(normalize_path(source))} "
            f"to {memory_uri(removed[0].target)}: {kinds}")


__all__ = ["memory_link", "memory_unlink"]
