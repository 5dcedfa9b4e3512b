"""Typed links between entries: the data model, as kept in an entry's ``.yml`` metadata.

An entry's ``links`` metadata is a list of mappings::

    links:
    - target: concept/ruby/modules.md   # a normalised entry path
      kind: extends                     # extends | contradicts | implements | references | supersedes
      strength: 0.8                     # 0..1
      origin: user                      # user (a person or agent asked for it) | system (made by memdir)
      created_at: '2026-11-26T06:00:00+00:00'
      traversed_at: '2026-11-26T07:00:00+00:00'   # absent until someone follows it

SwarmMemory's ``related: [paths]`` stays valid: each path is a link of kind ``references``,
origin ``user``, strength 1.0 (`entry_links` merges both lists; a typed link to the same
target and kind wins). The model lives in ``core`` because the storage layer indexes links
(the derived index's link table) and may not import anything above it; everything above takes
it from here (the graph operations are in `memdir.graph`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Literal, SupportsFloat, SupportsIndex

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memdir.core.errors import InputValidationError, InvalidPathError
from memdir.core.paths import link_target, normalize_path
from memdir.core.suggest import did_you_mean

LinkKind = Literal["extends", "contradicts", "implements", "references", "supersedes"]
LINK_KINDS: tuple[LinkKind, ...] = ("extends", "contradicts", "implements", "references", "supersedes")
LinkOrigin = Literal["user", "system"]
LINK_ORIGINS: tuple[LinkOrigin, ...] = ("user", "system")
_KIND_OF: dict[str, LinkKind] = {kind: kind for kind in LINK_KINDS}
_ORIGIN_OF: dict[str, LinkOrigin] = {origin: origin for origin in LINK_ORIGINS}
_FLOAT_LIKE = SupportsFloat | SupportsIndex | str | bytes | bytearray  # what float() takes
UNREADABLE_LINKS = "links_unreadable"
"""The metadata key under which `memdir.storage.sidecar` keeps ``links`` items that are no link
(a typo in a kind, a bad path): never lost, and reported by the health analysis."""
RELATED_KIND: LinkKind = "references"
"""The kind a SwarmMemory ``related`` path stands for."""


def _now() -> datetime:
    return datetime.now(UTC)


def check_link_kind(kind: object) -> LinkKind:
    """``kind`` if it is a link kind (case and spaces forgiven), else a clear `InputValidationError`."""
    text = str(kind).strip().lower() if kind is not None else ""
    found = _KIND_OF.get(text)
    if found is None:
        raise InputValidationError(
            f"{kind!r} is not a link kind; the kinds are {', '.join(LINK_KINDS)}.{did_you_mean(text, LINK_KINDS)}",
            "Use 'references' for a plain 'see also', 'extends' or 'implements' for one entry building on "
            "another, 'contradicts' for a disagreement and 'supersedes' when the source replaces the target.",
        )
    return found


def check_strength(strength: object) -> float:
    """``strength`` as a float in [0, 1], else a clear `InputValidationError`."""
    try:
        value = float(strength) if isinstance(strength, _FLOAT_LIKE) else float("nan")
    except (TypeError, ValueError):
        value = float("nan")
    if not 0.0 <= value <= 1.0:  # (NaN fails too)
        raise InputValidationError(
            f"A link's strength must be a number from 0 to 1, not {strength!r}.",
            "Use 1.0 for a firm link, lower values for a looser one.",
        )
    return value


def check_origin(origin: object) -> LinkOrigin:
    found = _ORIGIN_OF.get(origin) if isinstance(origin, str) else None
    if found is None:
        raise InputValidationError(
            f"A link's origin is 'user' or 'system', not {origin!r}.",
            "Links a person or agent asks for are 'user' links; memdir's own (defrag, ingest) are 'system' links.",
        )
    return found


class Link(BaseModel):
    """One typed link from the entry holding it to ``target``."""

    model_config = ConfigDict(frozen=True)

    target: str
    kind: LinkKind = RELATED_KIND
    strength: float = 1.0
    origin: LinkOrigin = "user"
    created_at: datetime = Field(default_factory=_now)
    traversed_at: datetime | None = None

    @field_validator("target", mode="before")
    @classmethod
    def _normalised_target(cls, value: Any) -> str:
        return normalize_path(str(value))  # a bad path raises InvalidPathError, which names it

    @field_validator("kind", mode="before")
    @classmethod
    def _known_kind(cls, value: Any) -> str:
        try:
            return check_link_kind(value)
        except InputValidationError as exc:
            raise ValueError(exc.message) from None

    @field_validator("strength", mode="before")
    @classmethod
    def _unit_strength(cls, value: Any) -> float:
        try:
            return check_strength(value)
        except InputValidationError as exc:
            raise ValueError(exc.message) from None

    @field_validator("created_at", "traversed_at", mode="after")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        """Naive times (a hand edit) are UTC."""
        return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value

    @property
    def key(self) -> tuple[str, str]:
        """What identifies a link among its entry's links: (target, kind)."""
        return self.target, self.kind

    def to_yaml(self) -> dict[str, Any]:
        """The mapping written to the ``.yml`` (times as ISO-8601 text, ``traversed_at`` only when set)."""
        data: dict[str, Any] = {
            "target": self.target, "kind": self.kind, "strength": round(self.strength, 4), "origin": self.origin,
            "created_at": self.created_at.isoformat(),
        }  # fmt: skip
        if self.traversed_at is not None:
            data["traversed_at"] = self.traversed_at.isoformat()
        return data


def make_link(target: str, kind: object = RELATED_KIND, strength: object = 1.0, origin: object = "user") -> Link:
    """A new link from caller input, each bad argument refused with its own clear error.

    Raises:
        InputValidationError: an unknown kind, a strength outside [0, 1], an unknown origin.
        InvalidPathError: a target that is no entry path.
    """
    return Link(
        target=normalize_path(target), kind=check_link_kind(kind), strength=check_strength(strength),
        origin=check_origin(origin),
    )  # fmt: skip


def parse_links(raw: Any) -> tuple[list[Link], list[Any]]:
    """(readable links, unreadable items) of a ``.yml`` ``links`` value written by anyone.

    A bare path is a ``references`` link; an item that is no link (unknown kind, bad path)
    is returned apart so the caller can keep it (nothing a person wrote is lost) and report it.
    """
    if raw is None:
        return [], []
    items = raw if isinstance(raw, list) else [raw]
    links: list[Link] = []
    unreadable: list[Any] = []
    for item in items:
        if isinstance(item, Link):
            links.append(item)
            continue
        data = {"target": item} if isinstance(item, str) else item
        try:
            if not isinstance(data, dict):
                raise ValueError("not a mapping")
            links.append(Link.model_validate(data))
        except (ValueError, InvalidPathError):  # pydantic's ValidationError is a ValueError
            unreadable.append(item)
    return links, unreadable


def related_links(related: Iterable[str]) -> list[Link]:
    """SwarmMemory's ``related`` paths as links (references, user, 1.0); unusable paths are skipped."""
    epoch = datetime(1970, 1, 1, tzinfo=UTC)  # unknown: the ``related`` list records no time
    found = []
    for value in related:
        target = link_target(value)
        if target:
            found.append(Link(target=target, kind=RELATED_KIND, created_at=epoch))
    return found


def entry_links(links: Iterable[Link], related: Iterable[str]) -> list[Link]:
    """Every link of an entry: its typed ``links``, then its ``related`` paths not already among them."""
    merged: dict[tuple[str, str], Link] = {}
    for link in links:
        merged.setdefault(link.key, link)
    for link in related_links(related):
        merged.setdefault(link.key, link)
    return list(merged.values())


__all__ = [
    "LINK_KINDS",
    "LINK_ORIGINS",
    "RELATED_KIND",
    "UNREADABLE_LINKS",
    "Link",
    "LinkKind",
    "LinkOrigin",
    "check_link_kind",
    "check_origin",
    "check_strength",
    "entry_links",
    "make_link",
    "parse_links",
    "related_links",
]
