"""The text shapes every memory tool shares (SwarmMemory's formats), in one place."""

from __future__ import annotations

from collections.abc import Iterable

from memdir.core.paths import memory_uri
from memdir.core.units import human_size, plural


def numbered_lines(content: str) -> str:
    """Content with 6-wide right-aligned line numbers: ``"     1 # Title"``.

    Lines are split like MemoryGrep splits them, so its line numbers match these.
    """
    return "\n".join(f"{str(number).rjust(6)} {line}" for number, line in enumerate(content.splitlines(), start=1))


def with_title(path: str, title: str | None) -> str:
    """``memory://path "Title"``, or ``memory://path`` when the title is unknown or empty."""
    uri = memory_uri(path)
    return f'{uri} "{title}"' if title else uri


def system_reminder(*lines: str) -> str:
    """A ``<system-reminder>`` block holding ``lines``."""
    return "\n".join(["<system-reminder>", *lines, "</system-reminder>"])


def bullet_list(items: Iterable[str], *, indent: str = "") -> str:
    """``- item`` lines."""
    return "\n".join(f"{indent}- {item}" for item in items)


__all__ = ["bullet_list", "human_size", "memory_uri", "numbered_lines", "plural", "system_reminder", "with_title"]
