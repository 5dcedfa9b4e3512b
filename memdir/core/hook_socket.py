"""The hooks' local socket: where it is, what goes over it, and the client side.

A Claude Code hook (`memdir discover` on every prompt, `memdir hook session-start`) is a
fresh process; on its own it opens the store and loads the model (0.7-1.5 s). When a memdir
server for the same store is running, it already has both, so the hook asks it instead
over a Unix socket (`memdir.server.local_socket` serves it) and takes the cold path when
nobody answers in time. No TCP port: only the owner can reach the socket, which lives in an
owner-only (0700) directory under the store's ``.memdir/`` and is itself 0600; the server
also checks the peer's uid where the platform tells it (``SO_PEERCRED``).

Socket paths are limited to ~107 bytes. For a store whose path is too long, the socket
goes under the user's runtime directory instead, named by a hash of the store's path; when
even that is too long there is no socket (the hooks take the cold path).

The wire format is one JSON line each way::

    -> {"v": 1, "kind": "discover", "root": "/abs/store", "prompt": "...", "include_skills": true}
    -> {"v": 1, "kind": "session-start", "root": "/abs/store", "cwd": "/project" | null}
    <- {"ok": true, "root": "/abs/store", "text": "<additionalContext, possibly empty>"}
    <- {"ok": false, "error": "why the server did not answer"}

Standard library only, and nothing heavy: the hook's fast path imports this first.
"""

from __future__ import annotations

import json
import os
import socket
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

VERSION = 1
KINDS = ("discover", "session-start")
MAX_SOCKET_PATH = 100
"""Bytes; ``sun_path`` holds 108 (104 on macOS) including the terminating NUL."""
MAX_LINE = 1_000_000
"""Bytes of one request or answer line; a prompt is far shorter, an answer is a few KB."""
SOCKET_DIR = "sock"
"""The socket's folder under a store's ``.memdir/`` (owner-only; the store's checks do not descend into it)."""
SOCKET_NAME = "hooks.sock"


class BadRequest(ValueError):
    """A request line the server refuses; the message says what was wrong."""


def runtime_dir() -> Path:
    """The user's own directory for sockets of stores whose own path is too long."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return Path(xdg) / "memdir"
    import tempfile  # (here, not at the top: a hook that asks a server imports as little as it can)

    return Path(tempfile.gettempdir()) / f"memdir-{os.getuid()}"


def socket_path(store_root: Path) -> Path | None:
    """The socket of the server for ``store_root`` (absolute), or None when no path short enough exists.

    The socket's directory must be owner-only (the server creates it so, the client checks).
    """
    local = store_root / ".memdir" / SOCKET_DIR / SOCKET_NAME
    if len(os.fsencode(local)) <= MAX_SOCKET_PATH:
        return local
    import hashlib  # only for a long store path (see `runtime_dir`)

    digest = hashlib.sha256(os.fsencode(store_root)).hexdigest()[:16]
    path = runtime_dir() / f"{digest}.sock"
    return path if len(os.fsencode(path)) <= MAX_SOCKET_PATH else None


def owner_only(directory: Path) -> bool:
    """True when ``directory`` is a real directory of this user that nobody else can enter."""
    try:
        info = os.lstat(directory)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o077


def canonical_root(store_root: Path) -> str:
    """The store root as both ends name it: absolute, user-expanded, symlinks resolved."""
    return str(Path(store_root).expanduser().resolve())


def ask(store_root: Path, request: dict[str, Any], timeout: float) -> str | None:
    """Ask the running server of ``store_root``; its text (maybe ""), or None when no server answered in time.

    ``request`` holds ``kind`` and its fields; the version and root are added here. Never
    raises: any failure (no server, a stale socket, a slow or odd answer) is None, and the
    caller does the work itself.
    """
    root = canonical_root(store_root)
    path = socket_path(Path(root))
    if path is None or timeout <= 0 or not owner_only(path.parent):
        return None
    line = json.dumps({"v": VERSION, **request, "root": root}, ensure_ascii=False).encode() + b"\n"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(timeout)
            client.connect(os.fspath(path))
            client.sendall(line)
            answer = _read_line(client)
    except OSError as exc:  # no server, a stale socket, or too slow
        _debug("no answer from the server at %s: %s", path, exc)
        return None
    try:
        reply = json.loads(answer)
    except ValueError:
        return None
    if not isinstance(reply, dict) or reply.get("ok") is not True or reply.get("root") != root:
        _debug("the server at %s did not answer: %s", path, reply)
        return None
    text = reply.get("text")
    return text if isinstance(text, str) else None


def answer(settings: Any, request: dict[str, Any], cold: Callable[[], str]) -> str:
    """A hook's answer: the running server's for ``request`` when the settings let hooks ask it
    (``hook_socket``, within ``hook_socket_timeout``), else — or when no server answers — ``cold()``,
    the hook doing the work itself.

    ``settings`` is a `memdir.core.settings.Settings` (not imported: this module stays light).
    """
    if settings.server.hook_socket:
        text = ask(settings.store_root, request, settings.server.hook_socket_timeout)
        if text is not None:
            return text
    return cold()


def _debug(message: str, *args: object) -> None:
    """Log why no server answered; `logging` loads only then (the full command line follows and needs it anyway)."""
    import logging

    logging.getLogger(__name__).debug(message, *args)


def _read_line(connection: socket.socket) -> bytes:
    """One newline-terminated line (at most `MAX_LINE` bytes) from ``connection``."""
    chunks, size = [], 0
    while True:
        chunk = connection.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection before answering")
        chunks.append(chunk)
        size += len(chunk)
        if b"\n" in chunk:
            return b"".join(chunks).split(b"\n", 1)[0]
        if size > MAX_LINE:
            raise ConnectionError(f"the answer is longer than {MAX_LINE} bytes")


def parse_request(line: bytes) -> dict[str, Any]:
    """The request in ``line``, checked field by field; `BadRequest` says what is wrong."""
    try:
        request = json.loads(line)
    except ValueError as exc:
        raise BadRequest(f"the request is not JSON ({exc}); send one JSON object per line") from exc
    if not isinstance(request, dict):
        raise BadRequest("the request must be a JSON object")
    if request.get("v") != VERSION:
        raise BadRequest(f"unsupported request version {request.get('v')!r}; this server speaks version {VERSION}")
    kind = request.get("kind")
    if kind not in KINDS:
        raise BadRequest(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
    fields: dict[str, tuple[type, ...]] = {"v": (int,), "kind": (str,), "root": (str,)}
    if kind == "discover":
        fields |= {"prompt": (str,), "include_skills": (bool,)}
    else:
        fields |= {"cwd": (str, type(None))}
    for name, types in fields.items():
        if name not in request or not isinstance(request[name], types):
            expected = " or ".join("null" if kind_ is type(None) else kind_.__name__ for kind_ in types)
            raise BadRequest(f"field {name!r} is missing or not {expected}")
    unknown = sorted(set(request) - set(fields))
    if unknown:
        raise BadRequest(f"unknown field(s) {', '.join(unknown)}")
    return request


def hook_output(event: str, text: str) -> str:
    """The hook's stdout for ``text`` as additional context ("" when there is nothing to add)."""
    if not text:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}, ensure_ascii=False) + "\n"


__all__ = [
    "BadRequest",
    "answer",
    "ask",
    "canonical_root",
    "hook_output",
    "owner_only",
    "parse_request",
    "socket_path",
]
