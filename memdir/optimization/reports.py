"""Defrag reports: one value per action run, readable as markdown and as JSON."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

UNDO_NOTE = "Every change is journaled: `memdir defrag --undo` reverts this run."


@dataclass(frozen=True)
class Wording:
    """How a report tells its reader to go on, in the words of where it is read: the MCP tool's
    parameters for a model, the command's options in a terminal, the page's buttons in the web view.

    Attributes:
        apply: how to apply what a dry run previewed (``{action}``: the action's name).
        call: how to run an action (``{action}``: its name, ``{name}``: it in words).
    """

    apply: str
    call: str

    def dry_run_note(self, action: str) -> str:
        return f"**Dry run** — nothing was changed. {self.apply.format(action=action, name=_words(action))}"

    def next_step(self, action: str, effect: str) -> str:
        """The note pointing at the action to run next."""
        return f"Next: {self.call.format(action=action, name=_words(action))} {effect}."


def _words(action: str) -> str:
    return action.replace("_", " ")


FOR_MODEL = Wording("Run again with `dry_run: false` to apply.", '`MemoryDefrag(action: "{action}")`')
"""The MCP tool's wording: its parameters."""
FOR_TERMINAL = Wording("Run again with `--live` to apply.", "`memdir defrag --action {action}`")
"""The CLI's wording: ``memdir defrag``'s options."""
FOR_WEB = Wording("Press “Run {name}” below to apply it.", "“{name}” on the health page")
"""The web view's wording: its pages and buttons."""
FOR_READ_ONLY_WEB = Wording("This web view is read-only: apply it with `memdir defrag --action {action} --live`.",
                            "“{name}” on the health page")
"""A read-only web view's wording: it has no buttons that change memory, a person has the command."""


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


__all__ = ["FOR_MODEL", "FOR_READ_ONLY_WEB", "FOR_TERMINAL", "FOR_WEB", "UNDO_NOTE", "Report", "Wording", "bullet_list", "demote", "document"]
