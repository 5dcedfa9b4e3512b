"""Bearer tokens for `memdir serve --http`: named, stored hashed, revocable while the server runs.

A token is 32 random bytes (``mdt_`` + URL-safe base64), shown once when it is created.
Its name tells tokens apart (lists, logs, per-client session state). Who its client acts as:

* a plain token (``memdir token create laptop``) acts as the server's own identity: the
  agent and role the server runs with. One person with a laptop token and a stdio server
  stays one owner of what both write;
* ``--agent NAME`` makes its client that agent (the owner of what it writes, with that
  agent's rights and no one else's); ``--role ROLE`` gives it a role (its view and the
  visibility of what it writes), and without ``--agent`` the token's name is its agent: a
  team member is somebody.

Admin never comes from a token: it stays a setting of whoever runs the server.
The token file (setting ``http_tokens_file``, 0600) keeps per token its name, a random
salt and SHA-256(salt + token): with 256 random bits there is nothing to guess, so a
slow password hash (scrypt) would only add its ~50 ms to every request without making
the file any safer. A token may also be given directly in the settings (``http_token``,
e.g. ``MEMDIR_HTTP_TOKEN``); it is then named ``settings``.

The server re-reads the file whenever it changes, so ``memdir token revoke NAME`` takes
effect on a running server with its next request. Changes to the file are made under a
lock file beside it and replace it atomically: two ``memdir token create`` at once both
land, and a crash leaves the old file or the new one.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import portalocker

from memdir.core.errors import ConfigError, InputValidationError
from memdir.core.identity import parse_role
from memdir.core.locations import AGENT_NAME

TOKEN_PREFIX = "mdt_"
SETTINGS_TOKEN_NAME = "settings"
TOKEN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""What a token's name may be: it is shown in lists and logs and names the client in the audit trail."""


@dataclass(frozen=True)
class StoredToken:
    """One token as the file keeps it (never the token itself)."""

    name: str
    salt: str
    digest: str
    created: str
    role: str | None = None  # the client's role; None: the server's
    agent: str | None = None  # the agent its client acts as; None: the server's own identity

    def matches(self, token: str) -> bool:
        return hmac.compare_digest(self.digest, _digest(self.salt, token))


def _digest(salt: str, token: str) -> str:
    return hashlib.sha256(bytes.fromhex(salt) + token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class HttpClient:
    """Who an HTTP request is from: its token's name, and the role and agent that token gives
    (None for either: the server's own)."""

    name: str
    role: str | None = None
    agent: str | None = None

    @property
    def is_server(self) -> bool:
        """True when the client acts as the server's own identity (a plain token)."""
        return self.role is None and self.agent is None


def new_token(name: str, role: str | None = None, agent: str | None = None) -> tuple[str, StoredToken]:
    """(the token to show once, what the file keeps of it)."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    salt = secrets.token_hex(16)
    created = datetime.now(UTC).replace(microsecond=0).isoformat()
    return token, StoredToken(name=name, salt=salt, digest=_digest(salt, token), created=created, role=role, agent=agent)


def _stored(item: dict) -> StoredToken:
    """One token from the file. A file written before tokens named their agent gave a role
    token's client the token's name as its agent: such a token keeps it."""
    if "agent" not in item and item.get("role"):
        item = {**item, "agent": item["name"]}
    return StoredToken(**item)


class TokenFile:
    """The named tokens in one file, and the check a request's token goes through."""

    def __init__(self, path: Path, settings_token: str | None = None) -> None:
        self.path = path.expanduser()
        self._settings_token = settings_token or None
        self._cache_lock = threading.Lock()
        self._cached: tuple[tuple[int, int, int] | None, list[StoredToken]] = (None, [])

    # ------------------------------------------------------------------ reading
    def _signature(self) -> tuple[int, int, int] | None:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return None
        return stat.st_ino, stat.st_mtime_ns, stat.st_size

    def tokens(self) -> list[StoredToken]:
        """The stored tokens (re-read when the file changed since the last call)."""
        signature = self._signature()
        with self._cache_lock:
            if signature is not None and signature == self._cached[0]:
                return self._cached[1]
            tokens = self._load() if signature is not None else []
            self._cached = (signature, tokens)
            return tokens

    def _load(self) -> list[StoredToken]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return [_stored(item) for item in data["tokens"]]
        except FileNotFoundError:
            return []
        except (OSError, ValueError, TypeError, KeyError) as exc:
            raise ConfigError(
                f"The token file {self.path} cannot be read: {type(exc).__name__}: {exc}.",
                "Fix or delete it (then create tokens again with `memdir token create NAME`), "
                "or point http_tokens_file (MEMDIR_HTTP_TOKENS_FILE) elsewhere.",
            ) from exc

    @property
    def configured(self) -> bool:
        """True when at least one token would be accepted."""
        return bool(self._settings_token) or bool(self.tokens())

    def client_of(self, token: str) -> HttpClient | None:
        """The client ``token`` names (its name and role), or None when it is no valid token."""
        if not token:
            return None
        if self._settings_token and hmac.compare_digest(self._settings_token.encode(), token.encode()):
            return HttpClient(SETTINGS_TOKEN_NAME)
        for stored in self.tokens():
            if stored.matches(token):
                return HttpClient(stored.name, stored.role, stored.agent)
        return None

    # ------------------------------------------------------------------ changing
    def create(self, name: str, role: str | None = None, agent: str | None = None) -> str:
        """Add a token named ``name``; the token itself (it is not kept: show it once).

        Args:
            role: the role its client acts in (None: the server's).
            agent: the agent its client acts as (None: the token's name when a role is given,
                else the server's own identity).

        Raises:
            InputValidationError: the name or agent is not allowed, the name is taken, or the role is no role.
        """
        role_name = None if (parsed := parse_role(role)) is None else parsed.value
        if agent is not None and not AGENT_NAME.fullmatch(agent):
            raise InputValidationError(
                f"Agent name {agent!r} is not allowed.",
                "Use letters, digits, '-', '_' or '.' (up to 64), not starting with '.', e.g. `--agent reviewer-1`.",
            )
        if agent is None and role_name is not None:
            agent = name
        if not TOKEN_NAME.fullmatch(name or ""):
            raise InputValidationError(
                f"Token name {name!r} is not allowed.",
                "Use letters, digits, '.', '_' or '-' (up to 64), starting with a letter or digit, e.g. `laptop`.",
            )
        if name == SETTINGS_TOKEN_NAME:
            raise InputValidationError(f"{name!r} names the token given in the settings (http_token).", "Pick another name.")
        with self._changing() as tokens:
            if any(stored.name == name for stored in tokens):
                raise InputValidationError(
                    f"A token named {name!r} exists already.",
                    f"Pick another name, or `memdir token revoke {name}` first to replace it.",
                )
            token, stored = new_token(name, role_name, agent)
            tokens.append(stored)
        return token

    def revoke(self, name: str) -> None:
        """Remove the token named ``name``; a server refuses it from its next request on."""
        with self._changing() as tokens:
            kept = [stored for stored in tokens if stored.name != name]
            if len(kept) == len(tokens):
                names = ", ".join(stored.name for stored in tokens) or "none"
                raise InputValidationError(f"There is no token named {name!r}.", f"Tokens: {names} (`memdir token list`).")
            tokens[:] = kept

    @contextmanager
    def _changing(self) -> Iterator[list[StoredToken]]:
        """The token list to change in place, written back atomically (0600) under the file's lock."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with portalocker.Lock(str(self.path) + ".lock", mode="a", timeout=10):
            tokens = self._load()
            yield tokens
            payload = json.dumps({"tokens": [vars(stored) for stored in tokens]}, indent=2) + "\n"
            handle, temporary = tempfile.mkstemp(prefix=".tokens-", dir=self.path.parent)  # created 0600
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    out.write(payload)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(temporary, self.path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise


__all__ = ["SETTINGS_TOKEN_NAME", "TOKEN_PREFIX", "HttpClient", "StoredToken", "TokenFile", "new_token"]
