"""The memory entry: content plus the metadata SwarmMemory keeps in the ``.yml`` sidecar."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

ENTRY_TYPES = ("concept", "fact", "skill", "experience")
EntryType = Literal["concept", "fact", "skill", "experience"]
CONFIDENCE_LEVELS = ("high", "medium", "low")

if TYPE_CHECKING:
    import numpy as np

    Vector = np.ndarray
else:  # numpy stays off the import path of the server's start-up (entries only carry vectors)
    Vector = Any


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

    @field_validator("tags", "related", "tools", mode="before")
    @classmethod
    def _none_is_empty_list(cls, value: Any) -> Any:
        return [] if value is None else value

    @field_validator("permissions", mode="before")
    @classmethod
    def _none_is_empty_dict(cls, value: Any) -> Any:
        return {} if value is None else value

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
        return self.metadata.type
