"""The text shapes every memory tool shares (SwarmMemory's formats), in one place."""

from __future__ import annotations

from collections.abc import Iterable

from memdir.core.paths import MEMORY_SCHEME
from memdir.core.units import human_size


def numbered_lines(content: str) -> str:
    """Content with 6-wide right-aligned line numbers: ``"     1 # Title"``.

    Lines are split like MemoryGrep splits them, so its line numbers match these.
    """
    return "\n".join(f"{str(number).rjust(6)} {line}" for number, line in enumerate(content.splitlines(), start=1))


def memory_uri(path: str) -> str:
    """``memory://path`` (a path already carrying the scheme is left as it is)."""
    return path if path.startswith(MEMORY_SCHEME) else f"{MEMORY_SCHEME}{path}"


def with_title(path: str, title: str | None) -> str:
    """``memory://path "Title"``, or ``memory://path`` when the title is unknown or empty."""
    uri = memory_uri(path)
    return f'{uri} "{title}"' if title else uri


def system_reminder(*lines: str) -> str:
    """A ``<system-reminder>`` block holding ``lines``."""
    return "\n".join(["<system-reminder>", *lines, "</system-reminder>"])


def plural(count: int, singular: str, plural_form: str | None = None) -> str:
    """``1 entry`` / ``2 entries``; ``1 match`` / ``3 matches``."""
    if count == 1:
        return f"{count} {singular}"
    return f"{count} {plural_form or _plural(singular)}"


def _plural(word: str) -> str:
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "i", "o", "u"):
        return word[:-1] + "ies"
    if word.endswith(("s", "x", "ch", "sh")):
        return word + "es"
    return word + "s"


def bullet_list(items: Iterable[str], *, indent: str = "") -> str:
    """``- item`` lines."""
    return "\n".join(f"{indent}- {item}" for item in items)


__all__ = ["bullet_list", "human_size", "memory_uri", "numbered_lines", "plural", "system_reminder", "with_title"]
