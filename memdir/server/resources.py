"""Memory entries as MCP resources: ``memory://{+path}`` (template) and a listing of every entry.

The template uses RFC 6570 reserved expansion (``{+path}``) so that a path's slashes
match: ``memory://concept/ruby/classes.md``. The listing is added to ``resources/list``
by a middleware, since entries come and go while the server runs.
"""

import dataclasses
import json
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp_types import Resource
from pydantic import BaseModel

from memdir.core.errors import EntryNotFoundError, MemdirError
from memdir.core.identity import view_filter
from memdir.server.state import AppState, app_state
from memdir.tools.formatting import memory_uri

TEMPLATE = "memory://{+path}"
STATUS_URI = "memdir://status"
MIME_TYPE = "text/markdown"
LIST_LIMIT = 5000


def _list_entries(memory: Any) -> list[dict[str, Any]]:
    listed = []
    for info in sorted(memory.list(view=view_filter(memory.actor, False)), key=lambda i: i.path)[:LIST_LIMIT]:
        resource = Resource(
            uri=memory_uri(info.path),
            name=info.path,
            title=info.title or None,
            description=f"{info.type} entry" if info.type else None,
            mime_type=MIME_TYPE,
            size=info.size,
        )
        listed.append(resource.model_dump(by_alias=True, mode="json", exclude_none=True))
    return listed


async def list_entries(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Middleware: append every memory entry to ``resources/list``."""
    result = await call_next(ctx)
    if ctx.method != "resources/list" or not isinstance(ctx.lifespan_context, AppState):
        return result
    if isinstance(result, BaseModel):
        result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if not isinstance(result, dict):
        return result
    entries = await ctx.lifespan_context.host.run(_list_entries, read_only=True)
    return {**result, "resources": [*result.get("resources", []), *entries]}


async def read_entry(path: str, ctx: Context) -> str:
    """A memory entry's content (markdown, as stored)."""
    try:
        entry = await app_state(ctx).host.run(lambda memory: memory.read(path), read_only=True)
    except EntryNotFoundError as exc:
        raise ResourceNotFoundError(exc.message) from exc
    except MemdirError as exc:
        raise ResourceError(str(exc)) from exc
    return entry.content


def _status(memory: Any) -> str:
    """`memdir status` as JSON, with who this server acts as (its prefetch figures are in ``prefetch``)."""
    data = dataclasses.asdict(memory.status())
    actor = memory.actor
    data.update(root=str(data["root"]), agent=actor.name, role=actor.role.value if actor.role else None, admin=actor.admin)
    return json.dumps(data, indent=2)


def status_reader(server: Any) -> Callable[[], Awaitable[str]]:
    """The ``memdir://status`` handler of ``server`` (a static resource gets no request context:
    it finds the memory through the server's running state, as the web view does)."""

    async def read_status() -> str:
        """The memory's status: entries, model, index freshness, identity, prefetch cache hit rate."""
        state = server.app_state
        if state is None:
            raise ResourceError("The server is not running yet; read memdir://status again in a moment.")
        try:
            return await state.host.run(_status, read_only=True)
        except MemdirError as exc:
            raise ResourceError(str(exc)) from exc

    return read_status


def register(server: MCPServer[Any]) -> None:
    """Register the ``memory://`` template and the entry listing."""
    server.resource(
        TEMPLATE,
        name="memory-entry",
        title="Memory entry",
        description="A memory entry's markdown content, e.g. memory://concept/ruby/classes.md",
        mime_type=MIME_TYPE,
    )(read_entry)
    server.resource(
        STATUS_URI,
        name="memdir-status",
        title="memdir status",
        description="Entries, model, index freshness, this server's agent and role, and its prefetch cache hit rate (JSON).",
        mime_type="application/json",
    )(status_reader(server))
    server.middleware.append(list_entries)


__all__ = ["STATUS_URI", "TEMPLATE", "list_entries", "read_entry", "register", "status_reader"]
