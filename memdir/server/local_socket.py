"""The running server answers the Claude Code hooks over a local Unix socket.

`memdir.core.hook_socket` has the protocol and the client. This is the server's side: an
asyncio server in the lifespan (`serving`) that answers ``discover`` and ``session-start``
with the same functions the hooks call on their own (`memdir.tools.discovery.discover`,
`memdir.episodes.hooks.session_start_reminder`), run on the server's read pool with its
open `Memory` and loaded model. Anything it cannot answer at once (the model still loading,
the memory busy past the timeout) it declines, and the hook takes its cold path.

Claiming the socket: one server per store answers. Under a lock file in the socket's
directory, a server that finds a socket somebody answers on leaves it alone (and serves no
hooks); one that finds a dead socket (connection refused: its server was killed) replaces
it. On the way out a server removes the socket only if it is still the one it bound.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import socket
import stat
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.core.errors import MemdirError
from memdir.core.hook_socket import MAX_LINE, BadRequest, canonical_root, owner_only, parse_request, socket_path
from memdir.core.settings import Settings
from memdir.episodes.hooks import session_start_reminder
from memdir.tools.discovery import discover

if TYPE_CHECKING:
    from memdir.memory import Memory
    from memdir.server.state import MemoryHost

log = logging.getLogger(__name__)

PROBE_TIMEOUT = 0.2
"""Seconds to wait when checking whether another server answers on an existing socket."""


class Declined(Exception):
    """The server cannot answer this request now; the hook should answer on its own."""


@asynccontextmanager
async def serving(settings: Settings, host: MemoryHost) -> AsyncIterator[Path | None]:
    """Serve the hooks' socket of ``settings.store_root`` while the context is open; yields its path (None: not serving)."""
    claimed = _claim(canonical_root(settings.store_root)) if settings.server.hook_socket else None
    if claimed is None:
        yield None
        return
    listener, path, inode = claimed
    handler = functools.partial(_handle, settings=settings, host=host, root=canonical_root(settings.store_root))
    try:
        server = await asyncio.start_unix_server(handler, sock=listener, limit=MAX_LINE)
    except RuntimeError as exc:  # not running on asyncio (e.g. trio): no socket, the hooks answer on their own
        log.info("memdir: hooks socket not served (%s)", exc)
        listener.close()
        _release(path, inode)
        yield None
        return
    try:
        yield path
    finally:
        server.close()
        with suppress(asyncio.TimeoutError):
            await asyncio.wait_for(server.wait_closed(), timeout=1.0)
        _release(path, inode)


def _claim(root: str) -> tuple[socket.socket, Path, int] | None:
    """Bind the store's socket (replacing a dead one); None, with the reason logged, when this server will not serve it."""
    if not hasattr(socket, "AF_UNIX"):
        return None
    path = socket_path(Path(root))
    if path is None:
        log.info("memdir: no hooks socket for %s: its path is too long for a Unix socket; hooks start cold", root)
        return None
    directory = path.parent
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not owner_only(directory) and os.lstat(directory).st_uid == os.getuid():
            os.chmod(directory, 0o700)
    except OSError as exc:
        log.info("memdir: no hooks socket: cannot prepare %s (%s)", directory, exc)
        return None
    if not owner_only(directory):
        log.warning("memdir: no hooks socket: %s is not a directory only this user can enter", directory)
        return None
    import fcntl

    with open(directory / "claim.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _path_is_free(path):
            return None
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(os.fspath(path))
            os.chmod(path, 0o600)
            listener.listen(16)
            listener.setblocking(False)
            return listener, path, os.stat(path).st_ino
        except OSError as exc:
            listener.close()
            log.info("memdir: no hooks socket: cannot bind %s (%s)", path, exc)
            return None


def _path_is_free(path: Path) -> bool:
    """True when ``path`` may be bound: nothing there, or a socket nobody answers on (which is removed)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return True
    if not stat.S_ISSOCK(info.st_mode):
        log.warning("memdir: no hooks socket: %s exists and is not a socket; left alone", path)
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(PROBE_TIMEOUT)
        try:
            probe.connect(os.fspath(path))
        except (ConnectionRefusedError, FileNotFoundError):
            os.unlink(path)  # its server is gone: this one takes over
            return True
        except OSError as exc:
            log.info("memdir: no hooks socket: %s did not answer a probe (%s); left alone", path, exc)
            return False
    log.info("memdir: another server already answers the hooks on %s", path)
    return False


def _release(path: Path, inode: int) -> None:
    """Remove the socket if it is still the one this server bound."""
    with suppress(OSError):
        if os.stat(path).st_ino == inode:
            os.unlink(path)


def _same_user(connection: Any) -> bool:
    """True when the peer runs as this user (where the platform tells; elsewhere the 0700 directory guards)."""
    if not hasattr(socket, "SO_PEERCRED"):
        return True
    try:
        credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except OSError:
        return False
    _pid, uid, _gid = struct.unpack("3i", credentials)
    return uid == os.getuid()


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, settings: Settings,
                  host: MemoryHost, root: str) -> None:
    """Answer one request line on one connection, then close it."""
    timeout = settings.server.hook_socket_timeout
    try:
        if not _same_user(writer.get_extra_info("socket")):
            return
        try:
            line = await asyncio.wait_for(reader.readline(), timeout=timeout)
            request = parse_request(line)
            if request["root"] != root:
                raise BadRequest(f"this server serves {root}, not {request['root']}")
            text = await asyncio.wait_for(host.run(_answer, request, settings, read_only=True), timeout=timeout)
            reply: dict[str, Any] = {"ok": True, "root": root, "text": text}
        except (BadRequest, Declined, MemdirError, ValueError) as exc:
            reply = {"ok": False, "error": str(exc)}
        except TimeoutError:
            reply = {"ok": False, "error": f"no answer within {timeout} s"}
        writer.write(json.dumps(reply, ensure_ascii=False).encode() + b"\n")
        await writer.drain()
    except (OSError, asyncio.IncompleteReadError) as exc:  # the hook went away: nothing to answer
        log.debug("hooks socket: connection dropped (%s)", exc)
    finally:
        writer.close()


def _answer(memory: Memory, request: dict[str, Any], settings: Settings) -> str:
    """The hook's additional context for ``request``, from the server's open memory (runs on a read thread)."""
    if request["kind"] == "session-start":
        return session_start_reminder(memory, request["cwd"])
    if memory.model.state.value == "loading":
        raise Declined("the embedding model is still loading")
    return discover(memory, request["prompt"], settings, include_skills=request["include_skills"])


__all__ = ["serving"]
