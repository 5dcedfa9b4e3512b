"""The MCP tool function behind each tool name, and its registration with the SDK.

A memory tool's MCP function is built from the plain tool function in ``memdir.tools``
(`memory_tool`): its parameters typed and described from the function's signature and
docstring, the server's parts (memory, session, settings, the client's model) filled in per
call. The server answers ``tools/list`` from the stored definitions (`memdir.server.catalog`)
and registers a tool here at its first call, so a client's first answers never wait for the
tool modules or for the argument models the SDK builds from these signatures.

Input schemas: array parameters are declared as real JSON-schema arrays (objects as
objects, fixed choices as enums), but validation is lenient so that the tools' own
coercion (`memdir.tools.params`) also accepts SwarmMemory-style JSON strings
(``tags: '["a", "b"]'``) and answers anything else with its clear message.
"""

import importlib
import inspect
import sys
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field, WithJsonSchema

from memdir.core.settings import Settings
from memdir.server import sampling, toolsets, workspace
from memdir.server.modes import TOOLS, WORKSPACE_SPECS, ToolSpec, offers_skills, parse_docstring
from memdir.server.state import app_state, run_memory_tool, session_state
from memdir.tools.discovery import discover

INJECTED = ("memory", "session", "settings", "ask", "threads")
"""Parameters of a tool function that the server fills in (never part of the input schema); ``ask`` is the
client's model through MCP sampling (`memdir.server.sampling`), None when the client offers none."""


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


def _load(spec: ToolSpec) -> Callable[..., str]:
    """The plain tool function behind ``spec`` (an optional tool's module is installed: the server
    offers only those, `memdir.server.catalog.offered`)."""
    module_name, _, function = spec.target.partition(":")
    return getattr(importlib.import_module(module_name), function)


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


# --------------------------------------------------------------------------- by name
def tool_function(name: str, mode: str) -> Callable[..., Any]:
    """The function the SDK registers as tool ``name`` of ``mode``."""
    if name in WORKSPACE_SPECS:
        return workspace.TOOL_FUNCTIONS[name]
    if name == "MemoryDiscover":
        return _discover_tool(include_skills=offers_skills(mode))
    if name == "LoadSkill":
        return toolsets.load_skill_tool()
    fn = _load(TOOLS[name])
    return _defrag_tool(fn) if name == "MemoryDefrag" else memory_tool(fn, TOOLS[name])


def register(server: MCPServer[Any], name: str, mode: str) -> None:
    """Register tool ``name`` of ``mode`` (one `memdir.server.catalog.offered` gives) with ``server``.

    The SDK builds the tool's argument model and input schema from its function here.
    """
    function = tool_function(name, mode)
    spec = TOOLS.get(name) or WORKSPACE_SPECS[name]
    # (a memory tool's description is its docstring written for the model; a workspace tool's, the SDK's reading of it)
    description = parse_docstring(function).description if name in TOOLS else None
    server.add_tool(function, name=name, title=spec.title, description=description, annotations=spec.annotations,
                    structured_output=False)


__all__ = ["INJECTED", "memory_tool", "register", "tool_function"]
