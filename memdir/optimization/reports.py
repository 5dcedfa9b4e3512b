"""Defrag reports: one value per action run, readable as markdown and as JSON."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

DRY_RUN_NOTE = "**Dry run** — nothing was changed. Run again with `dry_run: false` (CLI: `--live`) to apply."
UNDO_NOTE = "Every change is journaled: `memdir defrag --undo` reverts this run."


@dataclass
class Report:
    """The result of one defrag action.

    Attributes:
        action: the action's name.
        dry_run: True/False for active actions, None for read-only ones.
        markdown: the report for people and models.
        data: the same facts as plain JSON-ready values.
        journal: the id of the journal a live run wrote (None if nothing changed).
    """

    action: str
    dry_run: bool | None
    markdown: str
    data: dict[str, Any] = field(default_factory=dict)
    journal: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "dry_run": self.dry_run, "journal": self.journal, **self.data}

    def __str__(self) -> str:
        return self.markdown


def bullet_list(lines: Sequence[str], limit: int, noun: str = "more") -> list[str]:
    """The first ``limit`` lines as they are, then a line saying how many were left out."""
    shown = list(lines[:limit])
    if len(lines) > limit:
        shown.append(f"- … and {len(lines) - limit} {noun} (pass a higher `limit` to list them)")
    return shown


def next_step(action: str, effect: str) -> str:
    """The note pointing at the action to run next, for the model (the tool) and for people (the command)."""
    return f'Next: `MemoryDefrag(action: "{action}")` (CLI: `memdir defrag --action {action}`) {effect}.'


def demote(markdown: str) -> str:
    """Every heading one level deeper, so a report can be a section of another."""
    return "\n".join(f"#{line}" if line.startswith("#") else line for line in markdown.splitlines())


def document(title: str, intro: Iterable[str], body: Iterable[str] = (), notes: Iterable[str] = ()) -> str:
    """``# title``, an intro paragraph, the body lines, then notes separated by blank lines."""
    parts = [f"# {title}", ""]
    parts.extend(intro)
    body = list(body)
    if body:
        parts.append("")
        parts.extend(body)
    for note in notes:
        parts.extend(["", note])
    return "\n".join(parts).rstrip() + "\n"


__all__ = ["DRY_RUN_NOTE", "Report", "UNDO_NOTE", "bullet_list", "demote", "document", "next_step"]
