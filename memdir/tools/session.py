"""Per-client-session state the tools share: what was read, and which skill is loaded.

One `Session` exists per MCP client session (per connection for stdio). The tools use
its `ReadTracker`; the server uses the skill fields to decide which workspace tools the
session sees and which permissions wrap them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from memdir.core.read_tracker import ReadTracker


def _new_session_id() -> str:
    return uuid.uuid4().hex


@dataclass
class Session:
    """State of one client session.

    Attributes:
        session_id: an opaque id (for logs and the audit trail).
        tracker: what this session has read (read-before-edit, stale-edit refusal).
        skill_path: the loaded skill's path, or None when no skill is loaded.
        skill_tools: the workspace tools the loaded skill asked for (its toolset), in its order.
        skill_permissions: the loaded skill's permissions (e.g. ``{"Bash": {"allowed_commands": [...]}}``).
        tool_rules: each workspace tool's rules under those permissions, made on first use
            (`memdir.workspace.tools.session_rules`), forgotten when another skill loads.
    """

    session_id: str = field(default_factory=_new_session_id)
    tracker: ReadTracker = field(default_factory=ReadTracker)
    skill_path: str | None = None
    skill_tools: list[str] = field(default_factory=list)
    skill_permissions: dict[str, Any] = field(default_factory=dict)
    tool_rules: dict[str, Any] = field(default_factory=dict)

    def activate_skill(self, path: str, tools: list[str], permissions: dict[str, Any]) -> None:
        """Make a skill the loaded one: its toolset replaces the previous skill's."""
        self.skill_path = path
        self.skill_tools = list(dict.fromkeys(tools))
        self.skill_permissions = dict(permissions)
        self.tool_rules = {}

    def clear_skill(self) -> None:
        """Unload the current skill (the session falls back to the memory tools only)."""
        self.skill_path = None
        self.skill_tools = []
        self.skill_permissions = {}
        self.tool_rules = {}

    @property
    def has_skill(self) -> bool:
        return self.skill_path is not None


__all__ = ["Session"]
