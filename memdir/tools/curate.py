"""What a person changes through the web view: edit, delete and unarchive an entry, run a defrag action.

Plain functions over a `Memory`, beside the MCP tools, under the same rules: every change goes
through `Memory` acting as the caller (its token's agent and role), so ownership is checked and
the change lands in the audit trail as for MemoryEdit and MemoryDelete. Read-before-edit: the
form carries the version of the content the person saw (`content_version`); when the entry
changed since, the change is refused (`StaleEditError`) and nothing is written. The write
itself is a compare-and-swap on that content under the root's lock.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from memdir.core.errors import InputValidationError, StaleEditError
from memdir.core.paths import normalize_path
from memdir.tools.memory_write import check_content

if TYPE_CHECKING:
    from memdir.core.entry import Entry
    from memdir.memory import Memory


def content_version(content: str) -> str:
    """A short fingerprint of an entry's content: what the edit and delete forms carry."""
    return hashlib.sha256(content.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _current(memory: Memory, path: str, seen: str) -> Entry:
    """The entry at ``path``, if it still holds the content whose version the person saw."""
    entry = memory.read(normalize_path(path))
    if content_version(entry.content) != seen:
        raise StaleEditError(entry.path)
    return entry


def edit_entry(memory: Memory, path: str, *, seen: str, content: str, title: str, tags: str) -> Entry:
    """Replace the entry's content, title and tags (comma-separated), keeping the rest of its metadata."""
    entry = _current(memory, path, seen)
    content = content.replace("\r\n", "\n")  # as browsers send a textarea
    check_content(content, memory.settings.limits.word_limit, before=entry.content)
    tag_list = list(dict.fromkeys(tag.strip() for tag in tags.split(",") if tag.strip()))
    metadata = entry.metadata.model_copy(update={"tags": tag_list})
    return memory.write(entry.path, content, title=title.strip(), metadata=metadata,
                        expected_content=entry.content).entry


def delete_entry(memory: Memory, path: str, *, seen: str) -> tuple[str, list[str]]:
    """Delete the entry and the links other entries hold to it; its path and the entries unlinked."""
    entry = _current(memory, path, seen)
    return memory.delete_and_unlink(entry.path)


def unarchive_entry(memory: Memory, path: str) -> Entry:
    """Bring an archived entry back into search and discovery (`memdir unarchive`)."""
    from memdir.evolution.archival import unarchive

    return unarchive(memory, path, now=datetime.now(UTC))


def run_defrag(memory: Memory, action: str) -> str:
    """Run defrag's active ``action`` for real, with its default options; its markdown report.

    Raises:
        InputValidationError: not an action that changes anything (those are shown, not run).
    """
    from memdir.optimization.defragmenter import Defragmenter
    from memdir.optimization.options import ACTIVE_ACTIONS
    from memdir.optimization.reports import FOR_WEB

    if action not in ACTIVE_ACTIONS:
        raise InputValidationError(f"{action!r} is not a defrag action that changes memory; they are "
                                   f"{', '.join(ACTIVE_ACTIONS)}.", "Use one of the buttons on the health page.")
    return Defragmenter(memory, wording=FOR_WEB).run(action, dry_run=False).markdown


__all__ = ["content_version", "delete_entry", "edit_entry", "run_defrag", "unarchive_entry"]
