"""A basic-memory project folder -> entries, its relations and ``[[wiki links]]`` -> links.

Format (basic-memory's "Knowledge Format", docs.basicmemory.com/concepts/knowledge-format, and
``NOTE-FORMAT.md`` in basicmachines-co/basic-memory): one markdown file per note, with YAML
frontmatter (``title`` default the file name, ``type`` default ``note``, ``tags`` a list or a
comma-separated string, ``permalink`` the stable id, any other field kept as the note's own);
observations are list items ``- [category] text #tag (context)``; relations are list items
``- relation_type [[Target]] (context)``, and a ``[[Target]]`` anywhere else is a ``links_to``
relation. A target is named by its title or its permalink.

A note becomes ``concept/<its folder>/<its name>.md`` with the body as written (observations
and relations stay readable in it), its tags and its frontmatter's other fields under
``imported``; a relation becomes a typed link to the target's entry. A relation to a note
that is not in the folder (basic-memory allows forward references) is reported as skipped.
Hidden folders (``.basic-memory``, ``.git``, ``.obsidian``) are not read.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from memdir.core.errors import InputValidationError
from memdir.episodes.ingest import parse_time
from memdir.importers.plan import Incoming, Skipped, link_kind, slug

_RELATION = re.compile(r"^\s*[-*]\s+([A-Za-z_][\w-]*)\s+\[\[([^\]]+)\]\]", re.MULTILINE)
_WIKI = re.compile(r"\[\[([^\]|#]+)(?:[#|][^\]]*)?\]\]")
_OBSERVATION_TAG = re.compile(r"^\s*[-*]\s+\[[^\]]+\].*$", re.MULTILINE)
_HASHTAG = re.compile(r"(?<![\w&])#([A-Za-z][\w-]*)")
_FRONTMATTER = re.compile(r"\A---\r?\n(.*?)\r?\n---\r?\n?", re.DOTALL)
STANDARD_FIELDS = ("title", "type", "tags", "permalink")


def read(source: Path) -> tuple[list[Incoming], list[Skipped]]:
    """The notes of a basic-memory project folder as entries, with their links."""
    if not source.is_dir():
        raise InputValidationError(f"{source} is not a folder.", "Give the basic-memory project's folder.")
    records: list[tuple[Incoming, list[tuple[str, str]]]] = []
    skipped: list[Skipped] = []
    targets: dict[str, str] = {}
    for file in sorted(source.rglob("*.md")):
        relative = file.relative_to(source)
        if any(part.startswith(".") for part in relative.parts):
            continue
        try:
            record, names, mentions = _note(file, relative)
        except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError) as exc:
            skipped.append(Skipped(str(relative), f"cannot be read as a note ({type(exc).__name__}: {exc})"))
            continue
        records.append((record, mentions))
        for name in names:
            targets.setdefault(name.strip().lower(), record.source_id)
    for record, mentions in records:
        resolved = []
        for relation, target in mentions:
            found = targets.get(target.strip().lower())
            if found is None:
                skipped.append(Skipped(f"{relation} [[{target}]] in {record.source_id}", "no note has that title or permalink"))
            else:
                resolved.append((found, link_kind(relation), relation))
        record.links = list(dict.fromkeys(resolved))
    return [record for record, _ in records], skipped


def _note(file: Path, relative: Path) -> tuple[Incoming, list[str], list[tuple[str, str]]]:
    """The note's entry (links not yet resolved), the names it answers to, and the (relation, target) it names."""
    text = file.read_text(encoding="utf-8")
    match = _FRONTMATTER.match(text)
    front: dict[str, Any] = {}
    if match:
        loaded = yaml.safe_load(match.group(1)) or {}
        if not isinstance(loaded, dict):
            raise ValueError("the frontmatter is not a mapping of fields")
        front, text = loaded, text[match.end():]
    title = str(front.get("title") or file.stem)
    permalink = str(front.get("permalink") or "/".join(slug(part) for part in relative.with_suffix("").parts))
    tags = front.get("tags") or []
    tags = [part.strip() for part in tags.split(",")] if isinstance(tags, str) else [str(tag) for tag in tags]
    for line in _OBSERVATION_TAG.findall(text):
        tags.extend(_HASHTAG.findall(line))
    mentions = [(relation, target) for relation, target in _RELATION.findall(text)]
    named = {target for _, target in mentions}
    mentions += [("links_to", target) for target in _WIKI.findall(text) if target not in named]
    stat = file.stat()
    created = parse_time(front.get("created")) or datetime.fromtimestamp(stat.st_ctime, tz=UTC)
    modified = parse_time(front.get("modified") or front.get("updated")) or datetime.fromtimestamp(stat.st_mtime, tz=UTC)
    extra = {key: value for key, value in front.items() if key not in STANDARD_FIELDS}
    origin: dict[str, Any] = {"entity_type": str(front.get("type") or "note"), "file": relative.as_posix()}
    if extra:
        origin["frontmatter"] = json.loads(json.dumps(extra, default=str))  # dates as text
    folder = "/".join(slug(part) for part in relative.parent.parts)
    record = Incoming(
        source_id=permalink, path=f"concept/{folder + '/' if folder else ''}{slug(file.stem)}.md", title=title,
        content=text if text.endswith("\n") else text + "\n",
        metadata={"type": "concept", "tags": list(dict.fromkeys(tag for tag in tags if tag))},
        created_at=created, updated_at=modified, origin=origin,
    )
    return record, [title, permalink, file.stem], mentions


__all__ = ["read"]
