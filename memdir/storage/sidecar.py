"""The encodings of an entry's ``.yml`` sidecar and ``.emb`` embedding file (SwarmMemory's format).

* ``.yml`` — a YAML mapping: ``title``, ``file_path``, ``updated_at`` (a YAML timestamp
  in Ruby's ``Time`` layout, ``2025-01-15 10:30:00.000000000 +00:00``, so SwarmMemory
  reads back a ``Time``, not a string), ``size``, ``hits``, ``metadata`` and
  ``embedding_checksum``, and next to it memdir's ``embedding_model`` and
  ``embedding_text_hash``: which model made the ``.emb`` and from which searchable text
  (`embedding_origin`). Files written by SwarmMemory (Ruby) carry ``:symbol`` keys and
  ``Time`` dumps; both read as is.
* ``.emb`` — 384 raw little-endian float32 values, no header.

Only conversions between bytes/text and values live here (no file access), so the
adapter decides what to read and how to degrade: a damaged sidecar or embedding makes
an entry lose its title or embedding, never its content.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import ValidationError

from memdir.core.entry import UNREADABLE_PERMISSIONS, Metadata
from memdir.core.errors import InputValidationError
from memdir.core.links import UNREADABLE_LINKS, parse_links
from memdir.core.paths import disk_stem

if TYPE_CHECKING:
    import yaml

log = logging.getLogger(__name__)

SIDECAR_SUFFIX = ".yml"
EMBEDDING_SUFFIX = ".emb"
EMBEDDING_DIM = 384
EMBEDDING_DTYPE = "<f4"
EMBEDDING_BYTES = EMBEDDING_DIM * 4
CHECKSUM_PREFIX = "sha256:"


@functools.cache
def yaml_codec() -> tuple[type[yaml.SafeLoader], type[yaml.SafeDumper]]:
    """PyYAML's safe loader and dumper: the C ones where PyYAML has them (same semantics, much
    faster: ~1.5 ms less per write). Imported at the first sidecar read or write, not with the
    store: a search answered from the index reads none."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader), getattr(yaml, "CSafeDumper", yaml.SafeDumper)


@functools.cache
def _sidecar_dumper() -> type[yaml.SafeDumper]:
    """The safe dumper, writing datetimes as plain YAML timestamps in Ruby's ``Time`` layout."""

    class SidecarDumper(yaml_codec()[1]):  # type: ignore[misc]
        pass

    SidecarDumper.add_representer(datetime, _represent_time)
    return SidecarDumper


def _represent_time(dumper: yaml.BaseDumper, value: datetime) -> yaml.ScalarNode:
    moment = value if value.tzinfo else value.replace(tzinfo=UTC)
    offset = moment.strftime("%z")  # "+0000"
    text = f"{moment:%Y-%m-%d %H:%M:%S}.{moment.microsecond:06d}000 {offset[:3]}:{offset[3:]}"
    return dumper.represent_scalar("tag:yaml.org,2002:timestamp", text)


# --------------------------------------------------------------------------- embeddings


def embedding_checksum(data: bytes) -> str:
    """The checksum stored in ``.yml`` for an ``.emb`` file's bytes: ``sha256:`` + 16 hex digits.

    The prefix tells our checksums apart from any other scheme an older writer used;
    only ours are verified.
    """
    return CHECKSUM_PREFIX + hashlib.sha256(data).hexdigest()[:16]


def encode_embedding(path: str, embedding: Any) -> bytes:
    """An embedding as ``.emb`` bytes, or `InputValidationError` if it is not 384 finite numbers."""
    try:
        vector = np.asarray(embedding, dtype=EMBEDDING_DTYPE)
    except (TypeError, ValueError) as exc:
        raise InputValidationError(
            f"The embedding for memory://{path} is not a list of numbers.",
            f"Pass {EMBEDDING_DIM} floats from the embedding model, or None to store the entry unembedded.",
        ) from exc
    if vector.shape != (EMBEDDING_DIM,):
        raise InputValidationError(
            f"The embedding for memory://{path} has shape {vector.shape}; memdir stores "
            f"{EMBEDDING_DIM} values per entry.",
            f"Embed with a {EMBEDDING_DIM}-dimension model (all-MiniLM-L6-v2), or pass None.",
        )
    if not np.isfinite(vector).all():
        raise InputValidationError(
            f"The embedding for memory://{path} contains NaN or infinite values.",
            "Re-embed the entry; a broken vector would corrupt similarity search.",
        )
    return vector.tobytes()


def set_embedding_fields(fields: dict[str, Any], checksum: str, model_id: str | None, text_hash: str | None) -> None:
    """Record a new ``.emb`` in sidecar ``fields``: its checksum and, when known, its model and text hash.

    Unknown provenance removes what an earlier vector's fields said, so they never vouch for this one.
    """
    fields["embedding_checksum"] = checksum
    for key, value in (("embedding_model", model_id), ("embedding_text_hash", text_hash)):
        if value:
            fields[key] = value
        else:
            fields.pop(key, None)


def embedding_origin(fields: Mapping[str, Any], checksum: str | None) -> tuple[str | None, str | None]:
    """(model id, text hash) a sidecar records for the ``.emb`` whose checksum is ``checksum``.

    Only a record made for these very bytes counts: an ``.emb`` copied in by hand, or one
    from SwarmMemory (no such keys; multi-qa-MiniLM-L6-cos-v1 by default there), is of
    unknown origin — (None, None) — and is re-embedded rather than compared with queries
    of a model that did not make it.
    """
    recorded = fields.get("embedding_checksum")
    model, text = fields.get("embedding_model"), fields.get("embedding_text_hash")
    if checksum is None or recorded != checksum or not isinstance(model, str) or not model:
        return None, None
    return model, text if isinstance(text, str) and text else None


def decode_embedding(data: bytes, checksum: str | None) -> np.ndarray | None:
    """The vector in an ``.emb`` file, or None if it is damaged (wrong length, checksum or values)."""
    if len(data) != EMBEDDING_BYTES:
        return None
    if isinstance(checksum, str) and checksum.startswith(CHECKSUM_PREFIX) and checksum != embedding_checksum(data):
        return None
    vector = np.frombuffer(data, dtype=EMBEDDING_DTYPE).astype(np.float32)
    return vector if np.isfinite(vector).all() else None


# --------------------------------------------------------------------------- the .yml sidecar


def _string_keys(value: Any) -> Any:
    """Ruby's YAML writes symbol keys as ``:title``; memdir reads them as ``title``."""
    if isinstance(value, dict):
        return {
            (key[1:] if isinstance(key, str) and key.startswith(":") else str(key)): _string_keys(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_string_keys(item) for item in value]
    return value


def _plain(value: Any) -> Any:
    """Only what ``yaml.safe_dump`` can write: dates become ISO-8601 strings, tuples lists."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_plain(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return json.loads(json.dumps(value, default=str))


def parse_sidecar(text: str) -> dict[str, Any] | None:
    """The ``.yml`` mapping with plain string keys, or None if it is not a readable mapping.

    A new mapping each time (`_string_keys` copies every dict and list; the other values the safe
    loader gives are immutable, but for a ``!!set``, which memdir never writes or changes), so
    callers may change what they get.
    """
    data = _parsed(text)
    return _string_keys(data) if isinstance(data, dict) else None


@functools.lru_cache(maxsize=2048)
def _parsed(text: str) -> Any:
    """The YAML document in ``text`` (None if it is none). Cached by the text: a change of many
    entries reads each one's sidecar two or three times (to decide, to check under the lock, to
    rewrite it), and parsing is most of the ~0.2 ms a read costs. Never changed by a caller."""
    import yaml

    try:
        return yaml.load(text, Loader=yaml_codec()[0])  # noqa: S506 — a safe loader (C SafeLoader)
    except yaml.YAMLError:
        return None


def dump_sidecar(data: Mapping[str, Any]) -> bytes:
    """A sidecar mapping as YAML bytes, keys in the given order (SwarmMemory's ``---`` start).

    ``updated_at`` stays a timestamp; times inside ``metadata`` are written as ISO-8601
    strings, as they always were (their readers expect strings).
    """
    fields = _plain(dict(data))
    if isinstance(data.get("updated_at"), datetime):
        fields["updated_at"] = data["updated_at"]
    import yaml

    text = yaml.dump(fields, Dumper=_sidecar_dumper(), sort_keys=False, allow_unicode=True, explicit_start=True)
    return text.encode("utf-8")


def as_datetime(value: Any) -> datetime | None:
    """A sidecar time as an aware datetime (naive means UTC), or None if it is not a time.

    Accepts what any writer left: ISO-8601 text, YAML timestamps and Ruby's ``Time`` dumps.
    """
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=UTC)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            reparsed = parse_sidecar(f"t: {value}")  # Ruby's '2025-01-15 10:30:00.000000000 +00:00'
            return as_datetime(reparsed["t"]) if reparsed and not isinstance(reparsed["t"], str) else None
        return as_datetime(parsed)
    return None


def as_int(value: Any) -> int:
    """A sidecar count (``hits``, ``size``); a hand-edited value that is not a count reads as 0."""
    try:
        return max(int(value), 0)
    except (TypeError, ValueError):
        return 0


_LIST_FIELDS = ("tags", "related", "tools", "visible_to")
_TEXT_FIELDS = ("type", "confidence", "domain", "source", "superseded_by", "kind", "created_by", "modified_by")


def metadata_from_yaml(raw: Any) -> Metadata:
    """Metadata from a sidecar's ``metadata`` mapping, tolerating hand edits and Ruby symbols.

    A single string where a list belongs becomes a one-item list; values of the wrong
    shape are dropped (with a log line) instead of making the entry unreadable.
    """
    if not isinstance(raw, dict):
        return Metadata()
    data: dict[str, Any] = {}
    for key, value in raw.items():
        if value is None:
            continue
        if key in _LIST_FIELDS:
            if isinstance(value, (str, int, float)):
                value = [value]
            if not isinstance(value, list):
                log.warning("Ignoring metadata field %r: expected a list, got %r", key, value)
                continue
            value = [str(item) for item in value if item is not None]
        elif key in _TEXT_FIELDS:
            value = str(value)
            if key in ("type", "confidence") and value.startswith(":"):
                value = value[1:]  # a Ruby symbol value
        elif key == "links":
            value, unreadable = parse_links(value)
            if unreadable:
                log.warning("Keeping unreadable links %r apart (under %r)", unreadable, UNREADABLE_LINKS)
                data[UNREADABLE_LINKS] = [*raw.get(UNREADABLE_LINKS, []), *unreadable]
        elif key == "archived_at":
            if as_datetime(value) is None:
                log.warning("Ignoring metadata field 'archived_at': %r is not a time", value)
                continue
            value = as_datetime(value)
        elif key == "importance" and not _is_number(value):
            log.warning("Ignoring metadata field 'importance': %r is not a number", value)
            continue
        elif key == "permissions" and not isinstance(value, dict):
            if not value:  # [] or "": no permissions, said another way
                continue
            log.warning("Unreadable metadata field 'permissions' (expected a mapping, got %r): the skill will not load", value)
            value = {UNREADABLE_PERMISSIONS: value}
        data[key] = value
    try:
        return Metadata.model_validate(data)
    except ValidationError as exc:
        log.warning("Ignoring unreadable metadata %r: %s", data, exc)
        return Metadata()


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, bool)


def fallback_title(content: str, path: str) -> str:
    """A title for an entry without a usable ``.yml``: its first heading, else its file name."""
    for line in content.splitlines()[:20]:
        stripped = line.strip()
        if stripped.startswith("#"):
            heading = stripped.lstrip("#").strip()
            if heading:
                return heading
    return disk_stem(path).rsplit("/", 1)[-1]
