"""`memdir serve --connect URL`: a stdio front for a running `memdir serve --http`.

An editor starts MCP servers as stdio subprocesses. With this front, every editor window
starts a small forwarder instead of a server of its own, and all of them share the one
HTTP server (one writer process, one loaded model, one index in memory).

The front relays JSON-RPC messages unchanged, in both directions, between the SDK's stdio
server transport (the editor's side) and its streamable-HTTP client transport (the
server's side, with ``Authorization: Bearer <token>``). The editor and the server
negotiate the protocol between themselves; the front keeps no state of its own, so one
editor window is one MCP session on the server (its own read tracker, its own skill).
Nothing at the address when the front starts, or a connection that breaks later, ends the
front with status 1 and the reason on stderr; the editor closing the front's standard input
(it quit, or dropped the server) ends it with status 0.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterable
from typing import Protocol

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from memdir.server.stopping import exit_for, run_until_signalled

CONNECT_TIMEOUT = 30.0
STREAM_READ_TIMEOUT = 300.0
"""The SDK's own defaults for MCP over HTTP: a server may keep an event stream quiet for minutes."""
WATCH_INTERVAL = 5.0
"""Seconds between two checks that the server still answers while the editor is quiet."""


class _Sink(Protocol):
    """Where `_relay` sends messages: the SDK's write streams."""

    async def send(self, item: SessionMessage, /) -> None: ...


async def _relay(source: AsyncIterable[SessionMessage | Exception], sink: _Sink, side: str) -> None:
    """Copy messages from ``source`` to ``sink`` until ``source`` ends; transport errors are logged, not sent."""
    async for message in source:
        if isinstance(message, SessionMessage):
            await sink.send(message)
        else:  # an unreadable line from the editor, a broken event stream from the server
            print(f"memdir serve --connect: {side}: {message}", file=sys.stderr, flush=True)


class ServerUnreachable(Exception):
    """The HTTP server cannot be reached (not started, wrong address) or stopped answering."""


async def _probe(client: httpx2.AsyncClient, url: str) -> int:
    """The HTTP status a plain request to ``url`` gets (opening no MCP session).

    Raises:
        ServerUnreachable: nothing answers at ``url``.
    """
    try:
        response = await client.get(url, headers={"accept": "text/event-stream"}, timeout=CONNECT_TIMEOUT)
    except httpx2.TransportError as exc:
        raise ServerUnreachable(f"no memdir server answers at {url} ({type(exc).__name__}: {exc}). "
                                "Start one with `memdir serve --http`, or check the address.") from exc
    await response.aclose()
    return response.status_code


async def _watch(client: httpx2.AsyncClient, url: str) -> None:
    """Return once the server stops answering: an idle front would otherwise never notice it went away
    (the SDK's transport only fails a request that is sent)."""
    while True:
        await anyio.sleep(WATCH_INTERVAL)
        try:
            await _probe(client, url)
        except ServerUnreachable:
            return


async def _check_reachable(client: httpx2.AsyncClient, url: str) -> None:
    """Fail at once, with the reason, when nothing answers at ``url`` (rather than leave the editor waiting)."""
    status = await _probe(client, url)
    if status in (401, 403):  # the editor gets the server's own words with its first request
        print(f"memdir serve --connect: {url} refuses this token ({status}); "
              "check --token or MEMDIR_HTTP_TOKEN.", file=sys.stderr, flush=True)


async def forward(url: str, token: str | None) -> None:
    """Relay between this process's stdio and the MCP server at ``url`` until stdin closes.

    A broken connection (the server stopped, the network went) ends the process at once
    with status 1 and a line on stderr, so the editor sees its server stop instead of
    waiting for answers: leaving normally would wait for the SDK's blocked stdin read.

    Raises:
        ServerUnreachable: nothing answers at ``url`` when the front starts.
    """
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = httpx2.Timeout(CONNECT_TIMEOUT, read=STREAM_READ_TIMEOUT)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout) as client:
        await _check_reachable(client, url)
        async with stdio_server() as (from_editor, to_editor):
            try:
                async with (
                    streamable_http_client(url, http_client=client) as (from_server, to_server),
                    anyio.create_task_group() as group,
                ):
                    async def downstream() -> None:
                        await _relay(from_server, to_editor, "from the server")
                        raise ServerUnreachable("the server closed the connection")  # nothing more will come

                    async def watch() -> None:
                        await _watch(client, url)
                        raise ServerUnreachable("the server stopped answering")

                    group.start_soon(downstream)
                    group.start_soon(watch)
                    await _relay(from_editor, to_server, "from the editor")
                    group.cancel_scope.cancel()  # the editor closed stdin: end the session (DELETE) and stop
            except Exception as exc:  # a request that could not be sent, or the stream that ended
                print(f"memdir serve --connect: lost the connection to the memdir server at {url}: "
                      f"{_reason(exc)}", file=sys.stderr, flush=True)
                os._exit(1)
            # stdio_server's writer runs until its stream is closed: without this the front would
            # outlive its editor, waiting for messages that no one will send.
            await to_editor.aclose()
        print("memdir serve --connect: the client closed its input; stopping.", file=sys.stderr, flush=True)


def _reason(error: BaseException) -> str:
    """The first real error inside (possibly nested) exception groups."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return f"{type(error).__name__}: {error}"


def forward_stdio(url: str, token: str | None) -> None:
    """Run `forward` until stdin closes, SIGTERM or Ctrl-C (which end the process at once, as `memdir serve` does)."""

    problem: list[ServerUnreachable] = []

    async def session() -> None:
        try:
            await forward(url, token)
        except ServerUnreachable as exc:
            problem.append(exc)

    async def main() -> None:
        stopped_by = await run_until_signalled(session)
        if stopped_by is not None:
            exit_for(stopped_by)

    anyio.run(main)
    if problem:
        print(f"memdir serve --connect: {problem[0]}", file=sys.stderr, flush=True)
        raise SystemExit(1)


__all__ = ["ServerUnreachable", "forward", "forward_stdio"]
