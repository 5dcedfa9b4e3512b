"""The memory entry: content plus the metadata SwarmMemory keeps in the ``.yml`` sidecar."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memdir.core.errors import InputValidationError
from memdir.core.identity import Labels, roles_of
from memdir.core.links import Link, entry_links, parse_links
from memdir.core.suggest import did_you_mean

ENTRY_TYPES = ("concept", "fact", "skill", "experience")
EntryType = Literal["concept", "fact", "skill", "experience"]
CONFIDENCE_LEVELS = ("high", "medium", "low")

if TYPE_CHECKING:
    import numpy as np

    Vector = np.ndarray
else:  # numpy stays off the import path of the server's start-up (entries only carry vectors)
    Vector = Any


def entry_type(declared: Any, path: str) -> str | None:
    """An entry's type: the one its metadata declares (SwarmMemory's ``:concept`` spelling
    too), else its top folder's when that folder is one of `ENTRY_TYPES`, so that a note
    written by hand under ``concept/`` is a concept for type filters and the health report."""
    if declared not in (None, ""):
        return str(declared).lstrip(":")
    folder, _, rest = path.partition("/")
    return folder if rest and folder in ENTRY_TYPES else None


def check_entry_types(values: Iterable[str] | None) -> None:
    """Refuse a type filter that is no entry type: a typo (``concepts``) would match nothing, silently.

    Raises:
        InputValidationError: names the types and the closest one.
    """
    for value in values or ():
        if value not in ENTRY_TYPES:
            raise InputValidationError(
                f"{value!r} is not an entry type; the types are {', '.join(ENTRY_TYPES)}.{did_you_mean(value, ENTRY_TYPES)}",
                f"Filter by one of: {', '.join(ENTRY_TYPES)}.",
            )


def utcnow() -> datetime:
    return datetime.now(UTC)


IMPORTANCE_RANGE = (1.0, 10.0)
DEFAULT_IMPORTANCE = 5.0
"""An entry's importance when its metadata gives none."""
EPISODES_PREFIX = "experience/episodes/"
"""Where episodes live (`memdir.episodes.store`): their ``importance`` is their own, 0-1."""


def importance_on_scale(path: str, stated: float | None) -> float:
    """An entry's importance on the 1-10 scale that ranking and the evolution jobs use: the
    metadata's, held to `IMPORTANCE_RANGE` (absent: 5); an episode's 0-1 importance is put
    on the same scale (``1 + 9 x``), so an important episode is not ranked as the least
    important entry. Out-of-range values are held, not refused: a hand edit must not make
    metadata unreadable."""
    low, high = IMPORTANCE_RANGE
    if stated is None:
        return DEFAULT_IMPORTANCE
    value = float(stated)
    if path.startswith(EPISODES_PREFIX):
        value = low + (high - low) * min(max(value, 0.0), 1.0)
    return min(max(value, low), high)


class Metadata(BaseModel):
    """Structured metadata; unknown keys are kept (``extra="allow"``) so nothing a user wrote is lost.

    fields : ``links`` (typed links, `memdir.core.links`;
    ``related`` still means ``references`` links), ``importance`` (1-10, absent = 5),
    ``archived_at`` / ``superseded_by`` (such entries leave search and discovery, stay readable),
    ``kind`` (the memory kind: decision, architecture, pattern, bug, ...), ``created_by`` /
    ``modified_by`` (agent names) and ``visible_to`` (roles).
    """

    model_config = ConfigDict(extra="allow")

    type: str | None = None
    confidence: str | None = None
    tags: list[str] = Field(default_factory=list)
    related: list[str] = Field(default_factory=list)
    links: list[Link] = Field(default_factory=list)
    domain: str | None = None
    source: str | None = None
    tools: list[str] = Field(default_factory=list)
    permissions: dict[str, Any] = Field(default_factory=dict)
    importance: float | None = None
    archived_at: datetime | None = None
    superseded_by: str | None = None
    kind: str | None = None
    created_by: str | None = None
    modified_by: str | None = None
    visible_to: list[str] = Field(default_factory=list)

    @field_validator("tags", "related", "tools", "visible_to", mode="before")
    @classmethod
    def _none_is_empty_list(cls, value: Any) -> Any:
        return [] if value is None else value

    @field_validator("links", mode="before")
    @classmethod
    def _links(cls, value: Any) -> Any:
        """Bare paths are ``references`` links; `memdir.storage.sidecar` sets unreadable items aside first."""
        links, unreadable = parse_links(value)
        if unreadable:
            raise ValueError(f"unreadable links {unreadable!r}: each needs a target path and a kind of extends, "
                             "contradicts, implements, references or supersedes, and a strength from 0 to 1")
        return links


    @field_validator("archived_at", mode="after")
    @classmethod
    def _aware_time(cls, value: datetime | None) -> datetime | None:
        return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value

    @property
    def all_links(self) -> list[Link]:
        """Typed links and ``related`` paths together (`memdir.core.links.entry_links`)."""
        return entry_links(self.links, self.related)

    @property
    def hidden(self) -> bool:
        """True for an archived or superseded entry: left out of search and discovery unless asked for."""
        return self.archived_at is not None or bool(self.superseded_by)

    @field_validator("permissions", mode="before")
    @classmethod
    def _none_is_empty_dict(cls, value: Any) -> Any:
        return {} if value is None else value

    def labels(self) -> Labels:
        """The access labels (`memdir.core.identity`) of an entry with this metadata."""
        kind = str(self.kind).strip().lower() if self.kind not in (None, "") else None
        owner = str(self.created_by).strip() if self.created_by not in (None, "") else None
        return Labels(kind, owner or None, roles_of(self.visible_to))

    def to_yaml_dict(self) -> dict[str, Any]:
        """Metadata as written to the ``.yml`` file: empty values left out, extras kept."""
        data = self.model_dump(exclude_none=True)
        if self.links:
            data["links"] = [link.to_yaml() for link in self.links]
        return {key: value for key, value in data.items() if value not in ([], {})}


UNREADABLE_PERMISSIONS = "(unreadable)"
"""The key under which a skill's ``permissions`` that are not a mapping are kept (as found),
so that loading the skill is refused: dropping them would run it without its restrictions."""


class Entry(BaseModel):
    """One memory entry as read from disk (or about to be written)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    path: str
    content: str
    title: str = ""
    updated_at: datetime = Field(default_factory=utcnow)
    size: int = 0
    hits: int = 0
    metadata: Metadata = Field(default_factory=Metadata)
    embedding: Vector | None = None
    embedding_checksum: str | None = None
    # Which model made ``embedding`` and from which searchable text (its hash), as recorded
    # beside the checksum in the .yml; None when unknown (SwarmMemory's files, a copied .emb).
    embedding_model: str | None = None
    embedding_text_hash: str | None = None
    virtual: bool = False

    @property
    def embedded(self) -> bool:
        return self.embedding is not None

    @property
    def type(self) -> str | None:
        """The declared type, else the folder's (`entry_type`)."""
        return entry_type(self.metadata.type, self.path)
