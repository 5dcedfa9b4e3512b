"""Who is acting on a memory, with which role, and what that lets them see and change.

An `Actor` is the identity of one connection or command: an agent name (``--agent``), an
optional role (``--role``) and whether it is an admin (``--admin`` or ``admin = true`` in
memdir.toml, never from the environment: a variable any child process inherits would make
every agent an admin). `Memory` carries one and checks it in every change it makes.

Roles and memory kinds: each role sees some kinds
by default (`ROLE_KINDS`), and what a role creates is visible to its own role and one other
(`ROLE_VISIBILITY`).

Ownership (`check_change`), the rule memdir documents for every case the design left open:

* an entry with an owner (``created_by``) is updated or deleted only by that agent, or by
  an admin; an anonymous caller (no ``--agent``) is nobody's owner, so it needs admin too;
* an entry without an owner (written before identities, by hand, or by an anonymous
  caller) may be changed by anyone, and changing it never takes ownership: its
  ``created_by`` stays empty, only ``modified_by`` records who changed it last;
* deleting is checked like updating (the same owner rule), and removing the links other
  entries hold to an entry deleted by its owner (or an admin) is part of that delete;
* reading is never refused: views narrow what search and listings show, they do not hide
  files that anyone with the directory can read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from memdir.core.errors import InputValidationError, NotOwnerError
from memdir.core.suggest import did_you_mean

if TYPE_CHECKING:
    from memdir.core.settings import Settings


class Role(str, Enum):
    """The agent roles."""

    ORCHESTRATOR = "orchestrator"
    OPTIMIZER = "optimizer"
    REVIEWER = "reviewer"
    EXECUTOR = "executor"


ROLES = tuple(role.value for role in Role)

KINDS = ("decision", "architecture", "coordination", "pattern", "skill", "bug", "test", "implementation")
"""The memory kinds (metadata ``kind``, beside SwarmMemory's four types)."""

ROLE_KINDS: dict[Role, tuple[str, ...]] = {
    Role.ORCHESTRATOR: ("decision", "architecture", "coordination"),
    Role.OPTIMIZER: ("decision", "pattern", "skill"),
    Role.REVIEWER: ("bug", "test", "decision"),
    Role.EXECUTOR: ("implementation", "pattern", "bug"),
}
"""The kinds each role sees by default."""

ROLE_VISIBILITY: dict[Role, tuple[str, ...]] = {
    Role.ORCHESTRATOR: ("orchestrator", "optimizer"),
    Role.OPTIMIZER: ("optimizer", "executor"),
    Role.REVIEWER: ("reviewer", "executor"),
    Role.EXECUTOR: ("executor", "reviewer"),
}
"""Who sees what a role creates, by default."""


def parse_role(value: str | Role | None) -> Role | None:
    """A role from its name (case-insensitive); None or ``""`` or ``none`` for no role.

    Raises:
        InputValidationError: not a role; names the roles and the closest one.
    """
    if value is None or isinstance(value, Role):
        return value
    text = value.strip().lower()
    if text in ("", "none"):
        return None
    if text not in ROLES:
        raise InputValidationError(
            f"{value!r} is not a role; the roles are {', '.join(ROLES)}.{did_you_mean(text, ROLES)}",
            "Pass --role orchestrator|optimizer|reviewer|executor, or leave it out.",
        )
    return Role(text)


def check_kind(value: str | None) -> str | None:
    """A memory kind, normalised (None or empty: no kind).

    Raises:
        InputValidationError: not one of `KINDS` (a typo would hide the entry from every role's view).
    """
    if value is None or not value.strip():
        return None
    text = value.strip().lower()
    if text not in KINDS:
        raise InputValidationError(
            f"{value!r} is not a memory kind; the kinds are {', '.join(KINDS)}.{did_you_mean(text, KINDS)}",
            "Use one of those kinds, or leave kind out.",
        )
    return text


@dataclass(frozen=True, slots=True)
class Labels:
    """What access rules look at in an entry: its kind, owner and the roles it is visible to."""

    kind: str | None = None
    created_by: str | None = None
    visible_to: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Actor:
    """Who makes a change or asks for a view (see the module docstring)."""

    name: str | None = None
    role: Role | None = None
    admin: bool = False

    @classmethod
    def from_settings(cls, settings: Settings) -> Actor:
        return cls(settings.roles.agent, parse_role(settings.roles.role), settings.roles.admin)

    @property
    def label(self) -> str:
        """How the audit log and refusals name this actor."""
        who = self.name or "anonymous"
        return f"{who} ({self.role.value})" if self.role else who

    def default_visibility(self) -> list[str]:
        """The roles what this actor creates is visible to (none without a role: everyone)."""
        return list(ROLE_VISIBILITY[self.role]) if self.role else []

    def sees(self, labels: Labels) -> bool:
        """Whether an entry is in this actor's view (its role's kinds, visible to its role).

        No role sees everything. An entry without a kind is in every view, whatever roles its
        ``visible_to`` names (an untyped memory is visible
        to all; ``visible_to`` narrows which roles see a kind); an entry of a kind is in the
        views of the roles that see that kind and that its ``visible_to`` names (all, when it
        names none); an agent always sees what it created.
        """
        if self.role is None or labels.kind is None or (self.name is not None and labels.created_by == self.name):
            return True
        visible = not labels.visible_to or self.role.value in labels.visible_to
        return labels.kind in ROLE_KINDS[self.role] and visible

    def in_audience(self, labels: Labels) -> bool:
        """Whether something without a kind (a working-memory thread) is for this actor: no role sees
        everything, its creator sees it, and otherwise the roles its ``visible_to`` names (all, when it
        names none)."""
        if self.role is None or (self.name is not None and labels.created_by == self.name):
            return True
        return not labels.visible_to or self.role.value in labels.visible_to

    def may_change(self, labels: Labels) -> bool:
        """Whether this actor may update or delete an entry with these labels (the ownership rule)."""
        return self.admin or labels.created_by is None or labels.created_by == self.name

    def check_change(self, path: str, labels: Labels, action: str) -> None:
        """Refuse a change this actor may not make.

        Raises:
            NotOwnerError: names the owner and how to proceed.
        """
        if not self.may_change(labels):
            raise NotOwnerError(path, labels.created_by or "", self.label, action)


def view_filter(actor: Actor, everything: bool) -> Actor | None:
    """The actor whose view a listing or search keeps, or None when it keeps everything."""
    return None if everything or actor.role is None else actor


def roles_of(values: Iterable[str] | None) -> tuple[str, ...]:
    """``visible_to`` as stored: role names, lowercased, unknown ones kept (a hand-edited file)."""
    return tuple(str(value).strip().lower() for value in values or () if str(value).strip())


__all__ = [
    "KINDS", "ROLES", "ROLE_KINDS", "ROLE_VISIBILITY", "Actor", "Labels", "Role",
    "check_kind", "parse_role", "roles_of", "view_filter",
]
