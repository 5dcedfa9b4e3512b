"""Built-in (virtual) entries: skills shipped inside the memdir package.

They appear in every memory root — readable, listed and globbed like any entry —
but live in the package (``memdir/skills/``), not in the root: they use no storage,
are never counted in the root's size, never collect hits, and can be neither
overwritten nor deleted (`memdir.core.errors.ReadOnlyEntryError`), so every agent
always has the same, intact copy.

Each one is a pair of package files: ``<name>.md`` (the content) and ``<name>.yml``
(a flat mapping: ``title`` plus the metadata fields ``type``, ``confidence``,
``tags``, ``domain``, ``tools``...).
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from importlib import resources
from types import MappingProxyType

from memdir.core.entry import Entry, Metadata
from memdir.storage.records import EntryInfo

#: logical path -> resource stem under ``memdir/skills/`` (SwarmMemory's mapping).
VIRTUAL_ENTRIES = MappingProxyType({"skill/meta/deep-learning.md": "meta/deep-learning"})

#: A fixed date, so built-ins look the same in every root and every test run.
BUILTIN_UPDATED_AT = datetime(2025, 1, 1, tzinfo=UTC)


def is_virtual(path: str) -> bool:
    """True if the normalised logical ``path`` names a built-in entry."""
    return path in VIRTUAL_ENTRIES


def virtual_paths() -> tuple[str, ...]:
    """Every built-in entry's logical path, sorted."""
    return tuple(sorted(VIRTUAL_ENTRIES))


def _resource(stem: str, suffix: str) -> bytes:
    return resources.files("memdir").joinpath("skills", *f"{stem}{suffix}".split("/")).read_bytes()


@cache
def _load(path: str) -> Entry:
    import yaml  # (read once per process, when a built-in is first shown: not on a store's opening)

    stem = VIRTUAL_ENTRIES[path]
    content = _resource(stem, ".md").decode("utf-8")
    sidecar = yaml.safe_load(_resource(stem, ".yml").decode("utf-8")) or {}
    if not isinstance(sidecar, dict):
        raise RuntimeError(f"The built-in entry {path} has a broken {stem}.yml; reinstall memdir.")
    title = str(sidecar.pop("title", "") or path)
    return Entry(
        path=path,
        content=content,
        title=title,
        updated_at=BUILTIN_UPDATED_AT,
        size=len(content.encode("utf-8")),
        hits=0,
        metadata=Metadata(**sidecar),
        embedding=None,
        virtual=True,
    )


def load_virtual(path: str) -> Entry:
    """The built-in entry at ``path`` (a fresh copy: callers may modify it freely).

    Raises:
        KeyError: ``path`` is not a built-in entry (check with `is_virtual`).
    """
    return _load(path).model_copy(deep=True)


def virtual_info(path: str) -> EntryInfo:
    """The listing row of a built-in entry."""
    entry = _load(path)
    return EntryInfo(
        path=entry.path,
        title=entry.title,
        size=entry.size,
        updated_at=entry.updated_at,
        type=entry.type,
        hits=0,
        mtime_ns=0,
        virtual=True,
    )
