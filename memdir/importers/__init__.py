"""`memdir import --from FORMAT SOURCE`: a way in from other memory systems and chat histories.

Formats (`FORMATS`): the MCP reference memory server's knowledge graph, mcp-memory-service's
database or export, a basic-memory project folder, and Claude.ai and ChatGPT conversation
exports. The first three become entries and links (`memdir.importers.plan`); the
conversations become episodes (`memdir.importers.conversations`). Every import is
idempotent, reports what it imported, left unchanged and skipped, with the reason, and is
all or nothing: an import stopped halfway is undone (`memdir.importers.journal`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.core.errors import InputValidationError
from memdir.core.suggest import did_you_mean
from memdir.episodes.ingest import Transcript
from memdir.importers import basic_memory, conversations, memory_service, reference_memory
from memdir.importers.journal import ImportJournal, roll_back_stopped
from memdir.importers.plan import ImportReport, Incoming, Skipped, apply

if TYPE_CHECKING:
    from memdir.memory import Memory


Progress = Callable[[int, int], None] | None
Reader = Callable[[Path], tuple[list[Incoming], list[Skipped]]]
Run = Callable[["Memory", Path, str, ImportJournal, Progress], ImportReport]


@dataclass(frozen=True)
class Format:
    """One source memdir imports: its name (``--from``), what to give, and how it is imported."""

    name: str
    what: str
    run: Run


def _entries(read: Reader) -> Run:
    def run(memory: Memory, source: Path, name: str, journal: ImportJournal, progress: Progress) -> ImportReport:
        records, skipped = read(source)
        return apply(memory, name, records, skipped, journal, progress)

    return run


def _episodes(read: Callable[[Any], Transcript | str]) -> Run:
    def run(memory: Memory, source: Path, name: str, journal: ImportJournal, progress: Progress) -> ImportReport:
        return conversations.import_conversations(memory, source, name, read, journal, progress)

    return run


FORMATS = {
    item.name: item for item in (
        Format("mcp-memory", "the MCP reference memory server's memory.jsonl", _entries(reference_memory.read)),
        Format("mcp-memory-service", "mcp-memory-service's sqlite_vec.db or its JSON export",
               _entries(memory_service.read)),
        Format("basic-memory", "a basic-memory project folder", _entries(basic_memory.read)),
        Format("claude", "a Claude.ai export (the zip, or its conversations.json)",
               _episodes(conversations.claude_transcript)),
        Format("chatgpt", "a ChatGPT export (the zip, or its conversations.json)",
               _episodes(conversations.chatgpt_transcript)),
    )
}


def check_format(name: str) -> Format:
    """The format called ``name``.

    Raises:
        InputValidationError: no such format; the message lists them.
    """
    found = FORMATS.get(name.strip().lower())
    if found is None:
        listed = ", ".join(FORMATS)
        raise InputValidationError(f"{name!r} is not a format memdir imports; the formats are {listed}."
                                   f"{did_you_mean(name.lower(), list(FORMATS))}",
                                   "Pass e.g. --from mcp-memory (`memdir import --help` says what each reads).")
    return found


def import_from(memory: Memory, name: str, source: Path,
                progress: Progress = None) -> ImportReport:
    """Import ``source`` in format ``name`` into ``memory`` (idempotent), all or nothing: first undoing
    any import found stopped halfway, then journaling this one (`memdir.importers.journal`)."""
    chosen = check_format(name)
    source = source.expanduser()
    if not source.exists():
        raise InputValidationError(f"{source} does not exist.", f"Give {chosen.what}.")
    undone = roll_back_stopped(memory)
    with ImportJournal(memory, chosen.name, str(source)) as journal:
        report = chosen.run(memory, source, chosen.name, journal, progress)
    report.rolled_back = undone
    return report


__all__ = ["FORMATS", "Format", "ImportReport", "check_format", "import_from"]
