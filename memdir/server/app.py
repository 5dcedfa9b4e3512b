"""`build_server(settings)`: the memdir MCP server for one memory root and one mode.

Nothing happens at import time. `build_server` sets up the mode's tools, the hidden
workspace tools, the prompts and the resources; the lifespan opens the memory on its own
thread (`memdir.server.state.MemoryHost`) so the server answers ``initialize`` and
``tools/list`` at once while the store and the model come up behind it. ``tools/list`` is
answered from the stored tool definitions (`memdir.server.catalog`); each tool is
registered with the SDK at its first call (`memdir.server.registration`), the prompts at
the first request for them.
"""

import gc
import logging
import sys
import typing
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
from mcp.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp_types import GetPromptResult, InputRequiredResult
from mcp_types import Prompt as MCPPrompt
from mcp_types import Tool as MCPTool
from pydantic import ValidationError

from memdir import __version__
from memdir.core.settings import Settings
from memdir.server import catalog, local_socket, prompts, resources, toolsets
from memdir.server.arguments import invalid_arguments_message, unknown_arguments_message
from memdir.server.modes import WORKSPACE_SPECS
from memdir.server.role_warming import warm_for_role
from memdir.server.scheduler import Scheduler, note_clients
from memdir.server.state import AppState, MemoryHost, SessionRegistry, open_after_handshake
from memdir.server.stopping import exit_at_once_on_signals, exit_for, run_until_signalled
from memdir.workspace.tools import Workspace

if typing.TYPE_CHECKING:
    from memdir.embeddings.base import Embedder

log = logging.getLogger(__name__)

SERVER_NAME = "memdir"


class MemdirServer(MCPServer[AppState]):
    """`MCPServer` for one mode's tools: it lists them from their stored definitions, registers
    each with the SDK at its first call, tells handshake-era clients its tool list can change
    (LoadSkill) and answers arguments that do not fit a tool's schema with a clear message."""

    app_state: AppState | None = None
    """The lifespan's state while the server runs (the web view shares its memory with the tools)."""

    def __init__(self, *args: Any, mode: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.mode = mode
        self.offered = catalog.offered(mode)
        """The tools this server offers (memory tools, then workspace tools), in the order it lists them."""
        self._tools: list[MCPTool] | None = None
        self._registered: set[str] = set()
        self._prompts_added = False

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        """The input schema of tool ``name``; None when this server has no such tool. (The SDK asks
        it too, to check a streamable-HTTP call's Mcp-Param headers, before the tool is registered.)"""
        return catalog.input_schema(name) if name in self.offered else None

    async def list_tools(self) -> list[MCPTool]:
        """The tools, with input schemas lean: a client sends them with every request to its model."""
        if self._tools is None:
            self._tools = catalog.definitions(self.offered)
        return list(self._tools)

    def register_tool(self, name: str) -> None:
        """Register tool ``name`` with the SDK, if this server offers it and it is not registered yet."""
        if name in self.offered and name not in self._registered:
            from memdir.server.registration import register

            register(self, name, self.mode)
            self._registered.add(name)

    async def list_prompts(self) -> list[MCPPrompt]:
        """The prompts, built at the first request for them (a client's tool list does not wait for them)."""
        self._add_prompts()
        return await super().list_prompts()

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None,
                         context: Context[AppState, Any] | None = None) -> GetPromptResult | InputRequiredResult:
        self._add_prompts()
        return await super().get_prompt(name, arguments, context)

    def _add_prompts(self) -> None:
        if not self._prompts_added:
            self._prompts_added = True
            prompts.register(self)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[AppState, Any] | None = None) -> Any:
        schema = self._tool_input_schema(name)
        unknown = sorted(set(arguments) - set(schema.get("properties", {}))) if schema is not None else []
        if unknown and schema is not None:
            raise ToolError(unknown_arguments_message(name, unknown, schema))
        self.register_tool(name)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            raise ToolError(invalid_arguments_message(name, cause, schema)) from cause

    def advertise_tool_changes(self) -> None:
        """Make every transport advertise tools.listChanged: LoadSkill changes a session's tools.

        The SDK's default options (stdio, and each streamable-HTTP session) say
        listChanged=false (2026-era clients learn it from subscriptions/listen instead).
        """
        lowlevel = self._lowlevel_server
        create = lowlevel.create_initialization_options

        def with_tool_changes(notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any) -> Any:
            return create(notification_options or NotificationOptions(tools_changed=True), *args, **kwargs)

        # (this server's options only: the SDK offers no hook for them)
        lowlevel.create_initialization_options = with_tool_changes  # type: ignore[method-assign]

    async def run_stdio_async(self) -> None:
        lowlevel = self._lowlevel_server
        options = lowlevel.create_initialization_options()
        async with stdio_server() as (read_stream, write_stream):
            stopped_by = await run_until_signalled(lambda: lowlevel.run(read_stream, write_stream, options))
            if stopped_by is not None:  # the memory is closed; leaving stdio_server would wait for stdin
                exit_for(stopped_by)


# --------------------------------------------------------------------------- the server
_SDK_LOGGING = "configure_logging"  # the name `MCPServer.__init__` calls in its module (not exported)


@contextmanager
def _plain_logging() -> Iterator[None]:
    """Construct an `MCPServer` with plain stderr logging instead of the SDK's rich handler.

    ``MCPServer.__init__`` calls ``configure_logging``, which imports rich (40 ms, 4% of the
    1 s start-up budget) for a log handler; ``logging.basicConfig`` with a plain handler
    does the same job. Only that name in the SDK's module is swapped, and only while the
    server is built; an SDK without it is left alone.
    """
    module = sys.modules[MCPServer.__module__]
    original = getattr(module, _SDK_LOGGING, None)
    if original is None:
        yield
        return

    def configure_logging(level: str = "INFO") -> None:
        logging.basicConfig(level=level, format="%(message)s", handlers=[logging.StreamHandler()])

    setattr(module, _SDK_LOGGING, configure_logging)
    try:
        yield
    finally:
        setattr(module, _SDK_LOGGING, original)


def build_server(settings: Settings | None = None, *, embedder: "Embedder | None" = None) -> "MemdirServer":
    """The memdir MCP server for ``settings`` (root, agent, mode, workspace, limits).

    Args:
        settings: configuration; default `Settings()` (config file + ``MEMDIR_*``).
        embedder: use this embedder instead of the real model (tests).
    """
    settings = settings or Settings()
    mode = settings.server.mode

    @asynccontextmanager
    async def lifespan(_: "MCPServer[AppState]") -> AsyncIterator[AppState]:
        host = MemoryHost(settings, embedder)
        evolution = Scheduler(settings, host) if settings.evolution.enabled else None
        try:
            async with local_socket.serving(settings, host), anyio.create_task_group() as background:
                if evolution is not None:
                    background.start_soon(evolution.serve)
                try:
                    server.app_state = AppState(
                        settings=settings,
                        host=host,
                        sessions=SessionRegistry(),
                        workspace=Workspace.from_settings(settings),
                        tools=tuple(name for name in server.offered if name not in WORKSPACE_SPECS),
                        workspace_tools=tuple(name for name in server.offered if name in WORKSPACE_SPECS),
                        scheduler=evolution,
                    )
                    yield server.app_state
                finally:
                    if evolution is not None:
                        evolution.stop()
                    background.cancel_scope.cancel()
        finally:
            server.app_state = None
            host.close()

    with _plain_logging():
        server = MemdirServer(
            SERVER_NAME,
            title="memdir",
            description="Persistent memory for LLM agents: markdown entries with local semantic search.",
            version=__version__,
            instructions=prompts.system_prompt(mode),
            lifespan=lifespan,
            log_level="WARNING",
            mode=mode,
        )
    server.advertise_tool_changes()
    server.middleware.append(open_after_handshake)
    toolsets.install(server)
    server.middleware.append(warm_for_role)
    server.middleware.append(note_clients)
    resources.register(server)
    return server


def serve(settings: Settings | None = None) -> None:
    """Run the server over stdio until the client disconnects (or SIGINT/SIGTERM stops it)."""
    import anyio

    from memdir.core.heap import keep_large_blocks_apart

    exit_at_once_on_signals()
    keep_large_blocks_apart()  # before the index and the model fill the heaps
    server = build_server(settings)
    # Everything imported and built by now (the MCP SDK's thousands of pydantic objects, the
    # tools' models) lives as long as the process: freezing it keeps the cyclic collector's
    # full passes, ~60 ms each over that heap, out of every later request. (`memdir serve` as
    # a client starts it turned the collector off while importing: on again from here.)
    gc.freeze()
    gc.enable()
    anyio.run(server.run_stdio_async)


__all__ = ["MemdirServer", "build_server", "serve"]
