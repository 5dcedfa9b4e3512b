"""Metadata quality: SwarmMemory's ``FrontmatterParser`` and ``MetadataExtractor.quality_score``.

memdir keeps an entry's metadata in its ``.yml`` sidecar, but people also write YAML
frontmatter at the top of the markdown itself::

    ---
    type: concept
    confidence: high
    tags: [ruby, oop]
    ---

    # Ruby Classes

Both count. `effective_metadata` merges them: sidecar values win for single fields,
list fields (``tags``, ``related``, ``tools``) are the union of both. `quality_score`
rates how complete that metadata is, with SwarmMemory's points:

| field present        | points |
|----------------------|--------|
| ``type``             | 20     |
| ``confidence``       | 20     |
| ``tags``             | 15     |
| ``related``          | 15     |
| ``domain``           | 10     |
| ``last_verified``    | 10     |
| ``confidence: high`` | +10    |

The maximum is 100.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from memdir.core.entry import Entry, Metadata

QUALITY_POINTS: Mapping[str, int] = {
    "type": 20,
    "confidence": 20,
    "tags": 15,
    "related": 15,
    "domain": 10,
    "last_verified": 10,
}
HIGH_CONFIDENCE_BONUS = 10
MAX_QUALITY = sum(QUALITY_POINTS.values()) + HIGH_CONFIDENCE_BONUS

LIST_FIELDS = ("tags", "related", "tools")
_FENCE = "---"
_CLOSERS = ("---", "...")
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True, slots=True)
class Frontmatter:
    """The YAML block at the top of an entry's content, and the text after it.

    ``data`` is empty when there is no frontmatter (``body`` is then the whole content);
    ``error`` says why a block that looked like frontmatter could not be read.
    """

    data: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    error: str | None = None

    @property
    def present(self) -> bool:
        return bool(self.data)


def parse_frontmatter(content: str) -> Frontmatter:
    """Split ``content`` into its YAML frontmatter and body (SwarmMemory's `FrontmatterParser.parse`).

    Frontmatter starts with a ``---`` line as the very first line and ends at the next
    ``---`` (or ``...``) line. Anything else, including malformed YAML, leaves the
    content as the body (with ``error`` set for malformed YAML), so a bad block never
    hides the entry's text.
    """
    if not content.startswith(_FENCE):
        return Frontmatter(body=content)
    lines = content.splitlines(keepends=True)
    if lines[0].rstrip("\r\n").rstrip() != _FENCE:
        return Frontmatter(body=content)
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r\n").rstrip() in _CLOSERS:
            block = "".join(lines[1:index])
            body = "".join(lines[index + 1:]).lstrip("\r\n")
            break
    else:
        return Frontmatter(body=content)
    try:
        data = yaml.load(block, Loader=_SafeLoader)  # noqa: S506 — a safe loader
    except yaml.YAMLError as exc:
        return Frontmatter(body=content, error=f"invalid YAML frontmatter: {exc}".splitlines()[0])
    if data is None:
        return Frontmatter(body=body)
    if not isinstance(data, dict):
        return Frontmatter(body=content, error="frontmatter is not a mapping of fields")
    return Frontmatter(data={str(key).lstrip(":"): value for key, value in data.items()}, body=body)


def _as_list(value: Any) -> list[Any]:
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple, set)):
        return [item for item in value if item not in (None, "")]
    return [value]


def effective_metadata(metadata: Metadata | Mapping[str, Any] | None, content: str = "") -> dict[str, Any]:
    """The metadata an entry really carries: its sidecar merged over its content's frontmatter.

    Empty values are dropped; list fields are the union of both sources (sidecar first).
    """
    if isinstance(metadata, Metadata):
        sidecar = metadata.to_yaml_dict()
    else:
        sidecar = {key: value for key, value in (metadata or {}).items() if value not in (None, "", [], {})}
    front = parse_frontmatter(content).data if content else {}
    merged: dict[str, Any] = {key: value for key, value in front.items() if value not in (None, "", [], {})}
    for key, value in sidecar.items():
        if key in LIST_FIELDS:
            combined = _as_list(value) + [item for item in _as_list(merged.get(key)) if item not in _as_list(value)]
            merged[key] = combined
        else:
            merged[key] = value
    for key in LIST_FIELDS:
        if key in merged:
            merged[key] = _as_list(merged[key])
            if not merged[key]:
                del merged[key]
    return merged


def confidence_of(metadata: Mapping[str, Any]) -> str | None:
    """The confidence level as a lower-case word (``high``), tolerating Ruby's ``:high``."""
    value = metadata.get("confidence")
    if value in (None, ""):
        return None
    return str(value).strip().lstrip(":").lower() or None


def score_metadata(metadata: Mapping[str, Any]) -> int:
    """The quality score (0-100) of an already merged metadata mapping."""
    score = 0
    for name, points in QUALITY_POINTS.items():
        value = metadata.get(name)
        present = bool(_as_list(value)) if name in LIST_FIELDS else value not in (None, "", [], {})
        if present:
            score += points
    if confidence_of(metadata) == "high":
        score += HIGH_CONFIDENCE_BONUS
    return score


def quality_score(metadata: Metadata | Mapping[str, Any] | None = None, content: str = "") -> int:
    """SwarmMemory's quality score (0-100) for an entry's metadata and content frontmatter.

    Args:
        metadata: the sidecar metadata (`Metadata` or a plain mapping).
        content: the entry's markdown; YAML frontmatter in it counts too.
    """
    return score_metadata(effective_metadata(metadata, content))


def entry_quality(entry: Entry) -> int:
    """`quality_score` of a stored entry."""
    return quality_score(entry.metadata, entry.content)


__all__ = [
    "Frontmatter",
    "HIGH_CONFIDENCE_BONUS",
    "MAX_QUALITY",
    "QUALITY_POINTS",
    "confidence_of",
    "effective_metadata",
    "entry_quality",
    "parse_frontmatter",
    "quality_score",
    "score_metadata",
]
