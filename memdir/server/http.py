"""`memdir serve --http`: one memdir server for many clients, over MCP streamable HTTP.

The MCP endpoint is the SDK's own streamable-HTTP transport (``/mcp``, one MCP session
per client, each with its own read tracker and loaded skill: `memdir.server.state`); the
read-only web view (`memdir.server.web`) is served by the same process from the same
memory. `memdir.server.http_guard` checks Host, Origin and the token of every request;
before that, `memdir.server.http_limits` cuts connections that send their request too slowly
and bounds the connections per client.

Every request needs a token, on loopback too: any local user of a shared machine could
otherwise read and change someone's memory. A server started with no token creates one
(named ``first``) and prints, once, how clients and the browser use it, as Jupyter does.

SIGTERM (and Ctrl-C): the server stops accepting connections, lets the MCP requests in
flight finish (up to ``http_shutdown_timeout``), closes the clients' event streams, then
closes the memory after the writes already queued — nothing acknowledged is lost, and
the root's lock is released.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from typing import TYPE_CHECKING, Any

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from sse_starlette.sse import AppStatus
from starlette.types import ASGIApp, Receive, Scope, Send

from memdir.core.errors import InputValidationError
from memdir.core.settings import Settings
from memdir.server import web
from memdir.server.http_guard import MCP_PATH, Gate, GuardMiddleware
from memdir.server.http_limits import ConnectionLimits, limited_protocol
from memdir.server.tokens import TokenFile

if TYPE_CHECKING:
    from memdir.embeddings.base import Embedder
    from memdir.server.app import MemdirServer


SWITCH_INTERVAL = 0.001
"""Seconds a thread may hold the interpreter while another waits for it (Python's default: 0.005).

Many clients' calls share one process: the event loop writing answers to sockets, the memory's
threads waiting on the database's answers. Each time one of them comes back from such a wait,
it waits again for the interpreter, until a thread busy in Python code lets go: by default up to
5 ms, on every socket write and every round trip of a change made while the store's lock is
held, so under 16 clients each write waited behind everyone's Python work many times over."""


class InFlight:
    """ASGI wrapper counting the POST requests (MCP calls) being answered, so shutdown can wait for them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.count = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        self.count += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.count -= 1


def tokens_for(settings: Settings) -> TokenFile:
    return TokenFile(settings.server.http_tokens_file, settings.server.http_token)


FIRST_TOKEN_NAME = "first"


def first_token(tokens: TokenFile) -> str | None:
    """Create the token a server without any needs (named `FIRST_TOKEN_NAME`); None when one exists."""
    if tokens.configured:
        return None
    try:
        return tokens.create(FIRST_TOKEN_NAME)
    except InputValidationError:  # another server created it at the same moment
        return None


def first_token_notice(token: str, tokens: TokenFile, base: str) -> str:
    """How to use the token a server created on its first start (printed once: only its hash is kept)."""
    return (f"memdir: this server needs a token and there was none, so it created one ({FIRST_TOKEN_NAME!r}, kept hashed "
            f"in {tokens.path}). It is shown only now:\n\n    {token}\n\n"
            f"  web view:  {base}/?token={token}\n"
            f"  MCP:       send `Authorization: Bearer {token}`, or `memdir serve --connect {base}{MCP_PATH} --token {token}`\n"
            "Its clients act as this server's own agent. `memdir token create NAME` makes more tokens, "
            f"`memdir token revoke {FIRST_TOKEN_NAME}` withdraws this one.")


def http_app(server: MemdirServer, settings: Settings, host: str, tokens: TokenFile) -> tuple[GuardMiddleware, InFlight]:
    """The whole HTTP application, guard -> in-flight counter -> (MCP endpoint + web view), and its counter."""
    web.register(server, settings)
    inner = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        # Host and Origin are checked by the guard for every route (the web view too).
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        session_idle_timeout=settings.server.http_session_idle_timeout,
        host=host,
        # Each call answered with one JSON body, not an event stream opened for it: the stream's
        # tasks and channels cost a third of a short call's time (7.3 vs 10.5 ms for a MemoryGlob).
        # What the server asks of a client unprompted (sampling) goes over the client's own stream.
        json_response=True,
    )
    inflight = InFlight(inner)
    gate = Gate.for_address(host, tokens, settings.server.http_allowed_hosts, settings.server.http_allowed_origins)
    guard = GuardMiddleware(inflight, gate)
    return guard, inflight


class MemdirHTTPServer(uvicorn.Server):
    """uvicorn, announcing where it listens and letting MCP calls in flight finish before it stops."""

    def __init__(self, config: uvicorn.Config, inflight: InFlight, drain_seconds: float, announce: bool,
                 first: tuple[str, TokenFile] | None = None) -> None:
        super().__init__(config)
        self.inflight, self.drain_seconds, self.announce, self.first = inflight, drain_seconds, announce, first

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.announce and self.servers:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            if self.first is not None:  # (before the address line, which tells those waiting for it that all is said)
                print(first_token_notice(*self.first, f"http://{shown}:{port}"), file=sys.stderr, flush=True)
            print(f"memdir: serving MCP at http://{shown}:{port}{MCP_PATH} and the web view at http://{shown}:{port}/",
                  file=sys.stderr, flush=True)

    async def shutdown(self, sockets: Any = None) -> None:
        for listener in self.servers:  # no new connections while the calls in flight finish
            listener.close()
        deadline = time.monotonic() + self.drain_seconds
        while self.inflight.count and time.monotonic() < deadline and not self.force_exit:
            await asyncio.sleep(0.05)
        AppStatus.should_exit = True  # now end the event streams that stay open (the clients' GET streams)
        await super().shutdown(sockets)


def serve_http(settings: Settings, *, host: str | None = None, port: int | None = None,
               embedder: Embedder | None = None) -> None:
    """Run the HTTP server until SIGTERM or Ctrl-C (creating its first token when there is none).

    Raises:
        ConfigError, StoreUnavailableError: the store setting names no store that can be used.
    """
    from memdir.core.heap import keep_large_blocks_apart
    from memdir.server.app import build_server
    from memdir.storage.stores import check_store

    keep_large_blocks_apart()  # as in `memdir.server.app.serve`: before the index and the model fill the heaps
    host = host or settings.server.http_host
    port = settings.server.http_port if port is None else port
    check_store(settings)
    tokens = tokens_for(settings)
    created = first_token(tokens)
    server = build_server(settings, embedder=embedder)
    app, inflight = http_app(server, settings, host, tokens)
    limits = ConnectionLimits(settings.server.http_header_timeout, settings.server.http_body_timeout,
                              settings.server.http_max_connections_per_client)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on", http=limited_protocol(limits),
                            timeout_graceful_shutdown=1)  # what remains after the drain: clients' idle event streams
    # sse-starlette ends every event stream as soon as the signal arrives, the answers to calls in
    # flight included; `MemdirHTTPServer.shutdown` ends them itself once those calls are answered.
    AppStatus.disable_automatic_graceful_drain()
    gc.freeze()  # as in `memdir.server.app.serve`: the SDK's objects live as long as the process
    sys.setswitchinterval(SWITCH_INTERVAL)
    first = None if created is None else (created, tokens)
    MemdirHTTPServer(config, inflight, settings.server.http_shutdown_timeout, announce=True, first=first).run()


__all__ = ["InFlight", "MemdirHTTPServer", "first_token", "http_app", "serve_http", "tokens_for"]
