"""mcp-memory-service's memories -> entries, its associations -> links.

Two sources, as that tool writes them (doobidoo/mcp-memory-service):

* its SQLite database (the ``sqlite_vec`` backend; schema in
  ``storage/mixins/migrations.py`` and ``storage/migrations/*.sql``): table ``memories``
  (``content_hash`` the id, ``content``, ``tags`` comma-separated, ``memory_type``,
  ``metadata`` JSON, ``created_at`` / ``updated_at`` epoch seconds, ``deleted_at`` set on a
  deleted memory) and, when present, ``memory_graph`` (``source_hash``, ``target_hash``,
  ``similarity``, ``relationship_type``);
* its JSON export (``sync/exporter.py``, `MemoryExporter.export_to_json`):
  ``{"export_metadata": {...}, "memories": [{"content", "content_hash", "tags",
  "created_at", "updated_at", "memory_type", "metadata", ...}]}``.

A memory becomes ``fact/<memory type>/<first words>-<hash>.md`` with its tags; the memory type
and metadata are kept under ``imported``. A deleted memory is skipped.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from memdir.core.errors import InputValidationError
from memdir.episodes.ingest import parse_time
from memdir.importers.plan import Incoming, Skipped, link_kind, slug
from memdir.importers.source import read_json

SQLITE_MAGIC = b"SQLite format 3\x00"
TITLE_WORDS = 8


def read(source: Path) -> tuple[list[Incoming], list[Skipped]]:
    """The entries and skipped records of a database or an export file."""
    if source.is_file() and source.read_bytes()[:16] == SQLITE_MAGIC:
        rows, associations = _database(source)
    else:
        rows, associations = _export(read_json(source)), []
    records, skipped, seen = [], [], set()
    for number, row in enumerate(rows, start=1):
        problem = _problem(row)
        ident = str(row.get("content_hash") or f"#{number}")
        if problem:
            skipped.append(Skipped(f"memory {ident}", problem))
        elif ident in seen:
            skipped.append(Skipped(f"memory {ident}", "appears twice; the first is kept"))
        else:
            seen.add(ident)
            records.append(_entry(row))
    by_id = {record.source_id: record for record in records}
    for source_hash, target_hash, relation in associations:
        if source_hash in by_id:
            by_id[source_hash].links.append((target_hash, link_kind(relation), relation))
    return records, skipped


def _database(path: Path) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]]]:
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            db.row_factory = sqlite3.Row
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "memories" not in tables:
                raise InputValidationError(f"{path} is an SQLite database without a memories table.",
                                           "Give mcp-memory-service's database (sqlite_vec.db) or its JSON export.")
            rows = [dict(row) for row in db.execute("SELECT * FROM memories ORDER BY id")]
            associations = []
            if "memory_graph" in tables:
                columns = {row[1] for row in db.execute("PRAGMA table_info(memory_graph)")}
                kind = "relationship_type" if "relationship_type" in columns else "'related'"
                associations = [(row[0], row[1], row[2] or "related") for row in
                                db.execute(f"SELECT source_hash, target_hash, {kind} FROM memory_graph")]  # noqa: S608
    except sqlite3.DatabaseError as exc:
        raise InputValidationError(f"Cannot read the database {path}: {exc}.",
                                   "Close mcp-memory-service first, or import its JSON export.") from exc
    for row in rows:
        row["tags"] = [tag.strip() for tag in (row.get("tags") or "").split(",") if tag.strip()]
        row["metadata"] = _json_object(row.get("metadata"))
    return rows, associations


def _export(data: Any) -> list[dict[str, Any]]:
    memories = data.get("memories") if isinstance(data, dict) else None
    if not isinstance(memories, list):
        raise InputValidationError('The file is JSON but has no "memories" list.',
                                   "Give the file mcp-memory-service's export wrote, or its sqlite_vec.db.")
    return [item if isinstance(item, dict) else {"_bad": item} for item in memories]


def _json_object(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) and text else {}
    except json.JSONDecodeError:
        return {"unreadable": text}
    return value if isinstance(value, dict) else {"value": value}


def _problem(row: dict[str, Any]) -> str | None:
    if "_bad" in row:
        return "is not a JSON object"
    if row.get("deleted_at"):
        return "was deleted in mcp-memory-service"
    if not isinstance(row.get("content"), str) or not row["content"].strip():
        return "has no content"
    if not isinstance(row.get("tags", []), list):
        return '"tags" must be a list'
    return None


def _entry(row: dict[str, Any]) -> Incoming:
    content, ident = row["content"], str(row["content_hash"])
    kind = str(row.get("memory_type") or "memory")
    words = content.split()
    title = " ".join(words[:TITLE_WORDS]) + (" …" if len(words) > TITLE_WORDS else "")
    origin: dict[str, Any] = {"memory_type": kind}
    if row.get("metadata"):
        origin["metadata"] = row["metadata"]
    if row.get("store") not in (None, "default"):
        origin["store"] = row["store"]
    return Incoming(
        source_id=ident, path=f"fact/{slug(kind)}/{slug(' '.join(words[:TITLE_WORDS]), 48)}-{ident[:8]}.md",
        title=title, content=content if content.endswith("\n") else content + "\n",
        metadata={"type": "fact", "tags": [str(tag) for tag in row.get("tags") or []]},
        created_at=parse_time(row.get("created_at")), updated_at=parse_time(row.get("updated_at")) or parse_time(row.get("created_at")),
        origin=origin,
    )


__all__ = ["read"]
