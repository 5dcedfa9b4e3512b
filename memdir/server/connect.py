"""`memdir serve --connect URL`: a stdio front for a running `memdir serve --http`.

An editor starts MCP servers as stdio subprocesses. With this front, every editor window
starts a small forwarder instead of a server of its own, and all of them share the one
HTTP server (one writer process, one loaded model, one index in memory).

The front relays JSON-RPC messages unchanged, in both directions, between the SDK's stdio
server transport (the editor's side) and its streamable-HTTP client transport (the
server's side, with ``Authorization: Bearer <token>``). The editor and the server
negotiate the protocol between themselves; the front keeps no state of its own, so one
editor window is one MCP session on the server (its own read tracker, its own skill).
"""

from __future__ import annotations

import logging
import sys

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from memdir.server.stopping import exit_for, run_until_signalled

log = logging.getLogger(__name__)

CONNECT_TIMEOUT = 30.0
STREAM_READ_TIMEOUT = 300.0
"""The SDK's own defaults for MCP over HTTP: a server may keep an event stream quiet for minutes."""


async def _relay(source: anyio.abc.ObjectReceiveStream, sink: anyio.abc.ObjectSendStream, side: str) -> None:
    """Copy messages from ``source`` to ``sink`` until ``source`` ends; transport errors are logged, not sent."""
    async for message in source:
        if isinstance(message, SessionMessage):
            await sink.send(message)
        else:  # an unreadable line from the editor, a broken event stream from the server
            print(f"memdir serve --connect: {side}: {message}", file=sys.stderr, flush=True)


async def forward(url: str, token: str | None) -> None:
    """Relay between this process's stdio and the MCP server at ``url`` until stdin closes."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = httpx2.Timeout(CONNECT_TIMEOUT, read=STREAM_READ_TIMEOUT)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as client,
        streamable_http_client(url, http_client=client) as (from_server, to_server),
        stdio_server() as (from_editor, to_editor),
    ):
        async with anyio.create_task_group() as group:
            group.start_soon(_relay, from_server, to_editor, "from the server")
            await _relay(from_editor, to_server, "from the editor")
            group.cancel_scope.cancel()  # the editor closed stdin: end the session (DELETE) and stop


def forward_stdio(url: str, token: str | None) -> None:
    """Run `forward` until stdin closes, SIGTERM or Ctrl-C (which end the process at once, as `memdir serve` does)."""

    async def main() -> None:
        stopped_by = await run_until_signalled(lambda: forward(url, token))
        if stopped_by is not None:
            exit_for(stopped_by)

    anyio.run(main)


__all__ = ["forward", "forward_stdio"]
