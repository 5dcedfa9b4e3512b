"""Checks every store makes of an entry it is asked to write, before anything is stored."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from memdir.core.entry import Metadata
from memdir.core.errors import EntryTooLargeError, InputValidationError, ReadOnlyEntryError, StorageFullError
from memdir.core.paths import disk_stem, normalize_path
from memdir.storage.base import EntryWrite, Redirect
from memdir.storage.stubs import KINDS
from memdir.storage.virtual import is_virtual


def refuse_virtual(path: str) -> None:
    """Built-in entries are package data: no store writes over them."""
    if is_virtual(path):
        raise ReadOnlyEntryError(path)


def valid_metadata(path: str, metadata: Metadata | Mapping[str, Any] | None) -> Metadata:
    """``metadata`` as `Metadata`, or a clear error naming what is wrong with it."""
    if isinstance(metadata, Metadata):
        return metadata
    try:
        return Metadata.model_validate(dict(metadata or {}))
    except (TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise InputValidationError(
            f"The metadata for memory://{path} is invalid: {exc}",
            "Pass tags, related and tools as lists of strings and permissions as a mapping.",
        ) from exc


def checked_writes(writes: Sequence[EntryWrite]) -> list[EntryWrite]:
    """The entries of a batch write with their paths normalised and metadata validated.

    Raises:
        InputValidationError: a path appears twice (which version would the batch keep?).
    """
    checked = [
        dataclasses.replace(w, path=path, title=str(w.title), metadata=valid_metadata(path, w.metadata))
        for w in writes for path in [normalize_path(w.path)]
    ]
    seen: set[str] = set()
    for write in checked:
        if write.path in seen:
            raise InputValidationError(
                f"memory://{write.path} is written twice in one batch.", "Write each path once per batch."
            )
        seen.add(write.path)
    return checked


def encode_content(path: str, content: str) -> bytes:
    """The content as the UTF-8 bytes stored, or a clear error if it is no text."""
    if not isinstance(content, str):
        raise InputValidationError(
            f"Content for memory://{path} must be text, not {type(content).__name__}.",
            "Pass the markdown as a string.",
        )
    try:
        return content.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputValidationError(
            f"Content for memory://{path} is not valid Unicode text (position {exc.start}).",
            "Remove the unpaired surrogate characters from the content.",
        ) from exc


def check_sizes(path: str, new_size: int, max_entry_size: int, total: int, max_total_size: int) -> None:
    """Refuse an entry of ``new_size`` bytes above ``max_entry_size``, or a store ``total`` above ``max_total_size``."""
    if new_size > max_entry_size:
        raise EntryTooLargeError(path, new_size, max_entry_size)
    if total > max_total_size:
        raise StorageFullError(total, max_total_size)


def valid_redirect(path: str, redirect: Redirect) -> Redirect:
    """The redirect a stub at ``path`` may hold (target normalised), or a clear error."""
    if redirect.kind not in KINDS:
        raise InputValidationError(
            f"Unknown redirect kind {redirect.kind!r} for memory://{path}.",
            f"Use one of: {', '.join(KINDS)}.",
        )
    target = normalize_path(redirect.target)
    if target == path:
        raise InputValidationError(
            f"memory://{path} cannot redirect to itself.",
            "Point the stub at the entry its content was merged into or moved to.",
        )
    return Redirect(kind=redirect.kind, target=target)


def folder_prefix(under: str | None) -> str:
    """``"concept/ruby/"`` for ``under="concept/ruby"`` ("" for none); validated like any memory path."""
    cleaned = (under or "").strip()
    cleaned = cleaned.removeprefix("memory://").rstrip("/")
    if not cleaned:
        return ""
    return disk_stem(normalize_path(cleaned)) + "/"
