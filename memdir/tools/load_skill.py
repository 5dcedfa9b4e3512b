"""LoadSkill's logic, without MCP: read and validate a skill, and word the toolset reminder.

The server owns the toolset: it calls `load_skill`, checks nothing else is needed,
calls ``session.activate_skill(...)``, swaps the session's visible tools, sends
``notifications/tools/list_changed`` and appends `toolset_reminder` to `SkillLoad.text`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memdir.core.errors import InputValidationError
from memdir.core.paths import normalize_path
from memdir.core.user_regex import RegexBudget
from memdir.tools.formatting import memory_uri, numbered_lines
from memdir.tools.session import Session
from memdir.workspace.tools import check_skill_permissions

if TYPE_CHECKING:
    from memdir.memory import Memory

SKILL_PREFIX = "skill/"


@dataclass(frozen=True)
class SkillLoad:
    """A validated skill, ready for the server to apply.

    Attributes:
        path: the skill's logical path (after following a merge/move stub).
        title: its title (``Untitled Skill`` when it has none).
        content: its content with line numbers.
        tools: the workspace tools it asks for, in its order, without repeats.
        permissions: its tool permissions (``{}`` when none).
        about: what the skill is about (its title and opening text): what the work it starts
            is likely to read, for prefetching.
    """

    path: str
    title: str
    content: str
    tools: list[str] = field(default_factory=list)
    permissions: dict[str, Any] = field(default_factory=dict)
    about: str = ""

    @property
    def text(self) -> str:
        """What the model sees: ``Loaded skill: TITLE``, a blank line, the numbered content."""
        return f"Loaded skill: {self.title}\n\n{self.content}"


ABOUT_CHARS = 300
"""The opening of a skill's text that says what it is about (prefetching searches for it)."""


def load_skill(
    memory: Memory,
    session: Session,
    file_path: str,
    available_tools: Collection[str] | None = None,
) -> SkillLoad:
    """Load a skill (a procedure under ``skill/``) that fits the task: your tools become the ones it lists.

    Args:
        file_path: the skill's path, e.g. ``skill/meta/deep-learning.md``.
    """
    logical = normalize_path(file_path)
    if not logical.startswith(SKILL_PREFIX):
        raise InputValidationError(
            f"Skills must be stored in skill/ hierarchy. Got: {file_path}",
            "Find skills with MemoryGlob(pattern: \"skill/**\").",
        )
    entry = memory.read(logical, count_hit=True)
    entry_type = entry.type
    if entry_type != "skill":
        raise InputValidationError(
            f"{memory_uri(entry.path)} is not a skill (type: {entry_type or 'none'})",
            "Only entries with type: skill can be loaded; read other entries with MemoryRead.",
        )
    check_skill_permissions(entry.metadata.permissions, RegexBudget.from_settings(memory.settings))
    tools = list(dict.fromkeys(str(name).strip() for name in entry.metadata.tools if str(name).strip()))
    if available_tools is not None:
        for name in tools:
            if name not in available_tools:
                raise InputValidationError(
                    f"Skill requires tool '{name}' but it's not available for this agent. "
                    f"Available tools: {', '.join(sorted(available_tools))}",
                    "Load another skill, or ask the user to enable that tool in memdir's configuration.",
                )
    session.tracker.register_entry(entry)
    if entry.path != logical:
        session.tracker.register_entry(entry, as_path=logical)
    return SkillLoad(
        path=entry.path,
        title=entry.title or "Untitled Skill",
        content=numbered_lines(entry.content),
        tools=tools,
        permissions=dict(entry.metadata.permissions or {}),
        about=f"{entry.title}\n{entry.content[:ABOUT_CHARS]}",
    )


def toolset_reminder(new_tools: Iterable[str], complete_toolset: Iterable[str]) -> str:
    """SwarmMemory's reminder after a skill changed the toolset.

    Args:
        new_tools: the tools the skill loaded, in the skill's order.
        complete_toolset: every tool the session now has (listed sorted).
    """
    loaded = list(dict.fromkeys(new_tools))
    everything = sorted(set(complete_toolset))
    lines = ["<system-reminder>", "Your available tools have been updated.", "", "New tools loaded from skill:"]
    lines += [f"  - {name}" for name in loaded] or ["  (none)"]
    lines += ["", "Your complete toolset is now:"]
    lines += [f"  - {name}" for name in everything]
    lines += ["", "Only use tools from this list.", "</system-reminder>"]
    return "\n".join(lines)


__all__ = ["SKILL_PREFIX", "SkillLoad", "load_skill", "toolset_reminder"]
