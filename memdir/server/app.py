"""`build_server(settings)`: the memdir MCP server for one memory root and one mode.

Nothing happens at import time. `build_server` registers the mode's tools (each with a
title, annotations and a typed input schema built from the plain tool function in
``memdir.tools``), the hidden workspace tools, the prompts and the resources; the
lifespan opens the memory on its own thread (`memdir.server.state.MemoryHost`) so the
server answers ``initialize`` and ``tools/list`` at once while the store and the model
come up behind it.

Input schemas: array parameters are declared as real JSON-schema arrays (objects as
objects, fixed choices as enums), but validation is lenient so that the tools' own
coercion (`memdir.tools.params`) also accepts SwarmMemory-style JSON strings
(``tags: '["a", "b"]'``) and answers anything else with its clear message.
"""

import gc
import importlib
import inspect
import logging
import sys
import types
import typing
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Annotated, Any

import anyio
from mcp.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp_types import Tool as MCPTool
from pydantic import Field, ValidationError, WithJsonSchema

from memdir import __version__
from memdir.core.settings import Settings
from memdir.server import local_socket, prompts, resources, sampling, toolsets, workspace
from memdir.server.arguments import invalid_arguments_message, unknown_arguments_message
from memdir.server.modes import TOOLS, ToolSpec, offers_skills, parse_docstring, tools_for_mode
from memdir.server.role_warming import warm_for_role
from memdir.server.scheduler import Scheduler, note_clients
from memdir.server.state import (
    AppState,
    MemoryHost,
    SessionRegistry,
    app_state,
    open_after_handshake,
    run_memory_tool,
    session_state,
)
from memdir.server.stopping import exit_at_once_on_signals, exit_for, run_until_signalled
from memdir.tools.discovery import discover
from memdir.workspace.tools import WORKSPACE_TOOLS, Workspace

if typing.TYPE_CHECKING:
    from memdir.embeddings.base import Embedder

log = logging.getLogger(__name__)

SERVER_NAME = "memdir"
INJECTED = ("memory", "session", "settings", "ask", "threads")
"""Parameters of a tool function that the server fills in (never part of the input schema); ``ask`` is the
client's model through MCP sampling (`memdir.server.sampling`), None when the client offers none."""


class MemdirServer(MCPServer[AppState]):
    """`MCPServer` that tells handshake-era clients its tool list can change (LoadSkill) and
    answers arguments that do not fit a tool's schema with a clear message."""

    _input_schemas: dict[str, dict[str, Any]] | None = None
    app_state: AppState | None = None
    """The lifespan's state while the server runs (the web view shares its memory with the tools)."""

    async def input_schema(self, name: str) -> dict[str, Any] | None:
        """The input schema of tool ``name`` (the tools are all registered when the server is built)."""
        if self._input_schemas is None:
            self._input_schemas = {tool.name: tool.input_schema for tool in await self.list_tools()}
        return self._input_schemas.get(name)

    async def list_tools(self) -> list[MCPTool]:
        """The tools, with input schemas lean: a client sends them with every request to its model."""
        return [tool.model_copy(update={"input_schema": lean_schema(tool.input_schema)}) for tool in await super().list_tools()]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[AppState, Any] | None = None) -> Any:
        schema = await self.input_schema(name)
        unknown = sorted(set(arguments) - set(schema.get("properties", {}))) if schema is not None else []
        if unknown and schema is not None:
            raise ToolError(unknown_arguments_message(name, unknown, schema))
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


# --------------------------------------------------------------------------- schemas
def lean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema without what pydantic adds and the model does not need: the titles it derives
    from names (``"title": "File Path"``) and ``"default": null`` (an optional parameter says so
    by not being required)."""
    lean = {key: value for key, value in schema.items() if key != "title" and not (key == "default" and value is None)}
    if isinstance(lean.get("properties"), dict):
        lean["properties"] = {name: lean_schema(value) for name, value in lean["properties"].items()}
    for key in ("items", "additionalProperties"):
        if isinstance(lean.get(key), dict):
            lean[key] = lean_schema(lean[key])
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(lean.get(key), list):
            lean[key] = [lean_schema(value) if isinstance(value, dict) else value for value in lean[key]]
    return lean


def _array(items: dict[str, Any]) -> Any:
    return WithJsonSchema({"type": "array", "items": items})


def _schema_for(hint: Any, enum: tuple[str, ...] | None) -> tuple[Any, list[Any]]:
    """(validation type, extra metadata) for one parameter's type hint."""
    origin = typing.get_origin(hint)
    arms = typing.get_args(hint) if origin in (typing.Union, types.UnionType) else (hint,)
    for arm in arms:
        if typing.get_origin(arm) in (list, tuple) or arm in (list, tuple):
            inner = typing.get_args(arm)
            items = {"type": "string"} if not inner or inner[0] is str else {}
            return Any, [_array(items)]
        if typing.get_origin(arm) is dict or arm is dict:
            return Any, [WithJsonSchema({"type": "object", "additionalProperties": True})]
    concrete = [arm for arm in arms if arm is not type(None)]
    if enum:
        return hint, [WithJsonSchema({"type": "string", "enum": list(enum)})]
    if len(concrete) == 1 and len(arms) == 2:  # Optional[X]: declare X, accept null too
        simple = {str: "string", int: "integer", float: "number", bool: "boolean"}.get(concrete[0])
        if simple:
            return hint, [WithJsonSchema({"type": simple})]
    return hint, []


def _type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    """The function's evaluated annotations (names only imported for type checking count as Any)."""
    localns = {"Memory": Any, "Session": Any, "Settings": Settings, "Embedder": Any, "ThreadManager": Any}
    try:
        return typing.get_type_hints(fn, localns=localns)
    except Exception:  # an annotation that cannot be evaluated: declare it as a plain string
        return {}


def memory_tool(fn: Callable[..., str], spec: ToolSpec) -> Callable[..., Any]:
    """An MCP tool function for a plain tool function ``fn(memory, session?, settings?, **params)``.

    The result's signature holds ``fn``'s own parameters (typed as described in the module
    docstring, described from ``fn``'s ``Args:``) plus the request context; ``memory``,
    ``session`` and ``settings`` are filled in per call, and keyword-only parameters with
    defaults (``*, now=None``) stay hidden: they are for Python callers, not the model.
    """
    doc = parse_docstring(fn)
    hints = _type_hints(fn)
    # A tool module lists its fixed-choice parameters in CHOICES (validation stays with the
    # tool and its wording; the schema only shows the model the values).
    choices: dict[str, tuple[str, ...]] = getattr(sys.modules[fn.__module__], "CHOICES", {})
    signature = inspect.signature(fn)
    wanted = [name for name in INJECTED[1:] if name in signature.parameters]
    read_only = bool(spec.annotations.read_only_hint)
    parameters: list[inspect.Parameter] = []
    for param in signature.parameters.values():
        if param.name in INJECTED:
            continue
        if param.kind is inspect.Parameter.KEYWORD_ONLY and param.default is not inspect.Parameter.empty:
            continue  # keyword-only parameters with defaults are for Python callers (tests), not the model
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise TypeError(f"{spec.name}: register tools taking *args/**kwargs by hand")
        base, extra = _schema_for(hints.get(param.name, str), choices.get(param.name))
        # (a type built at run time from the tool's signature: a checker sees only written ones)
        annotation = Annotated[(base, *extra, Field(description=doc.params.get(param.name) or None))]  # type: ignore[valid-type]
        parameters.append(inspect.Parameter(param.name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=param.default))
    parameters.append(inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context))

    async def tool(ctx: Context, **kwargs: Any) -> str:
        if "session" in wanted:
            kwargs["session"] = session_state(ctx).session
        if "settings" in wanted:
            kwargs["settings"] = app_state(ctx).settings
        if "ask" in wanted:
            kwargs["ask"] = sampling.client_ask(ctx, app_state(ctx).settings.threads.sampling_timeout)
        if "threads" in wanted:
            kwargs["threads"] = None  # the server's thread manager: MemoryHost fills it in once the memory is open
        return await run_memory_tool(ctx, fn, read_only=read_only, **kwargs)

    # (the SDK reads the tool's parameters from it; typeshed declares no __signature__ on functions)
    tool.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": str}
    tool.__name__ = spec.name
    tool.__doc__ = doc.description
    return tool


def _load(spec: ToolSpec) -> Callable[..., str] | None:
    """The plain tool function behind ``spec``; None for an optional tool that is not installed."""
    module_name, _, function = spec.target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if spec.optional and exc.name == module_name:
            return None
        raise
    return getattr(module, function)


# --------------------------------------------------------------------------- hand-wired tools
def _discover_tool(include_skills: bool) -> Callable[..., Any]:
    async def MemoryDiscover(  # noqa: N802 - the tool's name
        message: Annotated[str, Field(description="The user's message (or the task at hand), as written.")],
        ctx: Context,
        view_all: Annotated[bool, Field(description="Also entries outside your role's view.")] = False,
    ) -> str:
        """Find skills and memory entries relevant to a message: at the start of a task, when no reminder came with it.

        Returns:
            Up to two `<system-reminder>` blocks (skills, then memories) with each match's
            path and how to open it, or a short note when nothing relevant is stored.
        """
        settings = app_state(ctx).settings
        text = await run_memory_tool(
            ctx, discover, read_only=True, message=message, settings=settings, include_skills=include_skills,
            view_all=view_all,
        )
        return text or "No relevant skills or memories found for this message."

    return MemoryDiscover


def _defrag_tool(fn: Callable[..., str]) -> Callable[..., Any]:
    """MemoryDefrag: ``action`` plus the options its module declares (``PARAMETERS``, ``OPTION_SPECS``)."""
    module = sys.modules[fn.__module__]
    actions = list(module.ACTIONS)
    kinds: dict[str, str] = dict(module.PARAMETERS)
    specs = module.OPTION_SPECS
    doc = parse_docstring(fn)
    parameters = [
        inspect.Parameter("action", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[
            str, WithJsonSchema({"type": "string", "enum": actions}),
            Field(description=doc.params.get("action") or "What to do; `analyze` is the place to start."),
        ]),
        inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context),
    ]
    for name, kind in kinds.items():
        spec = specs.get(name)
        schema: dict[str, Any] = {"type": kind}
        if spec is not None and spec.choices:
            schema["enum"] = list(spec.choices)
        # Validation is left to the defragmenter (its messages; "false" strings for dry_run).
        annotation = Annotated[Any, WithJsonSchema(schema), Field(description=getattr(spec, "help", None))]
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=None))

    async def tool(ctx: Context, action: str, **options: Any) -> str:
        given = {name: value for name, value in options.items() if value is not None}
        return await run_memory_tool(ctx, fn, action=action, **given)

    # (the SDK reads the tool's parameters from it; typeshed declares no __signature__ on functions)
    tool.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": str}
    tool.__name__ = "MemoryDefrag"
    tool.__doc__ = doc.description
    return tool


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
    functions: dict[str, Callable[..., Any]] = {}
    for name in tools_for_mode(mode):
        spec = TOOLS[name]
        if name == "MemoryDiscover":
            functions[name] = _discover_tool(include_skills=offers_skills(mode))
        elif name == "LoadSkill":
            functions[name] = toolsets.load_skill_tool()
        elif name == "MemoryDefrag":
            fn = _load(spec)
            if fn is not None:
                functions[name] = _defrag_tool(fn)
        else:
            fn = _load(spec)
            if fn is not None:
                functions[name] = memory_tool(fn, spec)
    registered = tuple(functions)
    workspace_tools = WORKSPACE_TOOLS if offers_skills(mode) else ()

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
                        tools=registered,
                        workspace_tools=workspace_tools,
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
        )
    server.advertise_tool_changes()
    for name, function in functions.items():
        spec = TOOLS[name]
        server.add_tool(function, name=name, title=spec.title, description=parse_docstring(function).description,
                        annotations=spec.annotations, structured_output=False)
    workspace.register(server, workspace_tools)
    toolsets.install(server)
    server.middleware.append(open_after_handshake)
    server.middleware.append(warm_for_role)
    server.middleware.append(note_clients)
    prompts.register(server)
    resources.register(server)
    return server


def serve(settings: Settings | None = None) -> None:
    """Run the server over stdio until the client disconnects (or SIGINT/SIGTERM stops it)."""
    import anyio

    exit_at_once_on_signals()
    server = build_server(settings)
    # Everything imported and built by now (the MCP SDK's thousands of pydantic objects, the
    # tools' models) lives as long as the process: freezing it keeps the cyclic collector's
    # full passes, ~60 ms each over that heap, out of every later request. (`memdir serve` as
    # a client starts it turned the collector off while importing: on again from here.)
    gc.freeze()
    gc.enable()
    anyio.run(server.run_stdio_async)


__all__ = ["MemdirServer", "build_server", "memory_tool", "serve"]
