"""The memory entry: content plus the metadata SwarmMemory keeps in the ``.yml`` sidecar."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from memdir.core.errors import InputValidationError
from memdir.core.identity import Labels, roles_of
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
    return datetime.now(timezone.utc)


class Metadata(BaseModel):
    """Structured metadata; unknown keys are kept (``extra="allow"``) so nothing a user wrote is lost."""

    model_config = ConfigDict(extra="allow")

    type: str | None = None
    confidence: str | None = None
    tags: list[str] = Field(default_factory=list)
    related: list[str] = Field(default_factory=list)
    domain: str | None = None
    source: str | None = None
    tools: list[str] = Field(default_factory=list)
    permissions: dict[str, Any] = Field(default_factory=dict)
    # Seed 003's access labels (`memdir.core.identity`): the memory kind roles' views filter
    # on, the agent that created the entry (its owner), the last agent to change it, and the
    # roles it is visible to.
    kind: str | None = None
    created_by: str | None = None
    modified_by: str | None = None
    visible_to: list[str] = Field(default_factory=list)

    @field_validator("tags", "related", "tools", "visible_to", mode="before")
    @classmethod
    def _none_is_empty_list(cls, value: Any) -> Any:
        return [] if value is None else value

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
