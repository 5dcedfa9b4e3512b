"""Credentials kept out of everything memdir shows: messages, log lines, `memdir status`.

A store setting may carry a database password in any of the forms libpq takes — in the
URL (``postgresql://user:secret@host/db``), as a parameter (``?password=secret``), or in
a keyword DSN (``host=h password=secret``) — or be something else altogether that still
holds one (``mysql://user:secret@host/db``). `redact` finds every password the setting
holds, parsed by libpq's own rules (psycopg's ``conninfo_to_dict``) where it can, and
replaces it, plain or percent-encoded, wherever it appears in a text: the setting itself,
or a driver's error message that quotes it.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, quote, unquote, urlsplit

MASK = "***"
SECRET_KEYS = ("password", "sslpassword")
_KEYWORD_SECRET = re.compile(r"\b(?:ssl)?password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def secrets_of(store: str) -> list[str]:
    """The passwords ``store`` holds, in every spelling it may show them in, longest first."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    found: list[str] = []
    try:
        params = conninfo_to_dict(store)
        found += [str(params[key]) for key in SECRET_KEYS if params.get(key)]
    except psycopg.Error:  # not something libpq parses: the rules below still look
        pass
    parts = urlsplit(store)
    if "@" in parts.netloc:  # (``parts.password`` also validates the port, which may be the mistake)
        userinfo = parts.netloc.rpartition("@")[0]
        if ":" in userinfo:
            found.append(userinfo.partition(":")[2])
    found += [value for key, value in parse_qsl(parts.query) if key.lower() in SECRET_KEYS]
    found += [match.group(1).strip("'") for match in _KEYWORD_SECRET.finditer(store)]
    spellings = {form for secret in found if secret for form in (secret, unquote(secret), quote(secret, safe=""))}
    return sorted(spellings, key=len, reverse=True)


def redact(text: str, store: str) -> str:
    """``text`` with every password of the store setting ``store`` masked."""
    for secret in secrets_of(store):
        text = text.replace(secret, MASK)
    return text


def shown(store: str) -> str:
    """The store setting as messages and logs show it: its passwords masked."""
    return redact(store, store)


__all__ = ["MASK", "redact", "secrets_of", "shown"]
