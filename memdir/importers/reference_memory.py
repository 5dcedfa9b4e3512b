"""The MCP reference memory server's knowledge graph (``memory.jsonl``) -> entries and typed links.

Format (modelcontextprotocol/servers, ``src/memory``: README "Core Concepts" and ``index.ts``,
`KnowledgeGraphManager.saveGraph`): one JSON object per line, either
``{"type": "entity", "name", "entityType", "observations": [str]}`` or
``{"type": "relation", "from", "to", "relationType"}``; names are the ids. The older
``memory.json`` holds the same lines.

An entity becomes ``concept/<entity type>/<name>.md``: its observations as a list, its type as
a tag. A relation becomes a typed link from one entity's entry to the other's (the relation's
own name is kept under ``imported.relations``).
"""

from __future__ import annotations

import json
from pathlib import Path

from memdir.importers.plan import Incoming, Skipped, link_kind, slug
from memdir.importers.source import read_text


def read(source: Path) -> tuple[list[Incoming], list[Skipped]]:
    """The entries and the skipped lines of a reference-server memory file."""
    records: dict[str, Incoming] = {}
    relations: list[tuple[int, dict]] = []
    skipped: list[Skipped] = []
    for number, line in enumerate(read_text(source).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            skipped.append(Skipped(f"line {number}", f"not JSON ({exc.msg})"))
            continue
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "entity":
            problem = _entity_problem(item)
            if problem:
                skipped.append(Skipped(f"line {number}", problem))
            elif item["name"] in records:
                skipped.append(Skipped(f"line {number}", f"entity {item['name']!r} appears twice; the first is kept"))
            else:
                records[item["name"]] = _entry(item)
        elif kind == "relation":
            relations.append((number, item))
        else:
            skipped.append(Skipped(f"line {number}", 'neither an entity nor a relation (no "type" of either)'))
    for number, item in relations:
        ends = [item.get(key) for key in ("from", "to", "relationType")]
        if not all(isinstance(end, str) and end for end in ends):
            skipped.append(Skipped(f"line {number}", 'a relation needs "from", "to" and "relationType" strings'))
        elif item["from"] not in records:
            skipped.append(Skipped(f"line {number}", f"relation from {item['from']!r}, which is no entity"))
        else:
            records[item["from"]].links.append((item["to"], link_kind(item["relationType"]), item["relationType"]))
    return list(records.values()), skipped


def _entity_problem(item: dict) -> str | None:
    if not isinstance(item.get("name"), str) or not item["name"].strip():
        return 'an entity needs a "name"'
    if not isinstance(item.get("entityType", ""), str):
        return '"entityType" must be a string'
    observations = item.get("observations", [])
    if not isinstance(observations, list) or not all(isinstance(text, str) for text in observations):
        return '"observations" must be a list of strings'
    return None


def _entry(item: dict) -> Incoming:
    name, kind = item["name"], item.get("entityType") or "entity"
    observations = item.get("observations") or []
    body = "\n".join(f"- {text}" for text in observations) or "(no observations yet)"
    return Incoming(
        source_id=name, path=f"concept/{slug(kind)}/{slug(name)}.md", title=name,
        content=f"# {name}\n\n*{kind}*\n\n{body}\n",
        metadata={"type": "concept", "tags": [kind]}, origin={"entity_type": kind},
    )


__all__ = ["read"]
