"""Reading the audit log (`memdir.storage.audit_log`): ``memdir audit [PATH] [--agent A] [--since T]``."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from memdir.core.errors import InputValidationError
from memdir.core.paths import normalize_path
from memdir.storage.audit_log import AuditRecord
from memdir.storage.base import AuditTrail

_RELATIVE = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw])")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """A point in time from ``2026-11-01``, ``2026-11-01T08:00``, ``2026-11-01T08:00+02:00``
    (no zone: UTC) or an age such as ``30m``, ``12h``, ``7d``, ``2w``.

    Raises:
        InputValidationError: neither, with examples.
    """
    value = text.strip()
    age = _RELATIVE.fullmatch(value)
    if age:
        return (now or datetime.now(UTC)) - timedelta(**{_UNITS[age.group(2)]: float(age.group(1))})
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise InputValidationError(
            f"--since {text!r} is neither a date nor an age.",
            "Give an ISO date or time (2026-11-01, 2026-11-01T08:00) or an age (30m, 12h, 7d, 2w).",
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def audit_records(
    trail: AuditTrail, path: str | None = None, agent: str | None = None, since: datetime | None = None
) -> list[AuditRecord]:
    """The records of a store's audit trail, oldest first, of one entry / by one agent / since a time."""
    logical = normalize_path(path) if path else None
    return list(trail.records(path=logical, agent=agent, since=since))


def headline(record: AuditRecord) -> str:
    """One line per record: when, who (role), what, where, and whose entry when it was someone else's."""
    who = record.agent or "anonymous"
    if record.role:
        who += f" ({record.role})"
    text = f"{record.at[:19].replace('T', ' ')}  {who}  {record.action}  memory://{record.path}"
    if record.owner and record.owner != record.agent:
        text += f"  [owner {record.owner}{', admin override' if record.admin else ''}]"
    if record.details:
        text += "  " + ", ".join(f"{key}={value}" for key, value in sorted(record.details.items()))
    return text


__all__ = ["audit_records", "headline", "parse_since"]
