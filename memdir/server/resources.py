"""Memory entries as MCP resources: ``memory://{+path}`` (template) and a listing of every entry.

The template uses RFC 6570 reserved expansion (``{+path}``) so that a path's slashes
match: ``memory://concept/ruby/classes.md``. The listing is added to ``resources/list``
by a middleware, since entries come and go while the server runs.
"""

import base64
import dataclasses
import json
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, Resource
from pydantic import BaseModel

from memdir.core.errors import EntryNotFoundError, MemdirError
from memdir.core.identity import view_filter
from memdir.server.state import AppState, app_state
from memdir.tools.formatting import memory_uri

TEMPLATE = "memory://{+path}"
STATUS_URI = "memdir://status"
MIME_TYPE = "text/markdown"
_CURSOR = "entries-after:"


def _list_entries(memory: Any, after: str | None) -> tuple[list[dict[str, Any]], str | None]:
    """One page of the entries in this actor's view, in path order, and the cursor of the next page."""
    page = memory.list_page(after, max(1, memory.settings.server.resources_page_size), view=view_filter(memory.actor, False))
    listed = []
    for info in page.entries:
        resource = Resource(
            uri=memory_uri(info.path),
            name=info.path,
            title=info.title or None,
            description=f"{info.type} entry" if info.type else None,
            mime_type=MIME_TYPE,
            size=info.size,
        )
        listed.append(resource.model_dump(by_alias=True, mode="json", exclude_none=True))
    cursor = None if page.next_after is None else _CURSOR + base64.urlsafe_b64encode(page.next_after.encode()).decode()
    return listed, cursor


def _after(cursor: Any) -> str | None:
    """The path a ``resources/list`` cursor of ours continues after (None: the first page)."""
    if not cursor:
        return None
    if not isinstance(cursor, str) or not cursor.startswith(_CURSOR):
        raise MCPError(INVALID_PARAMS, "This cursor was not given by this server; list again without one.")
    try:
        return base64.urlsafe_b64decode(cursor[len(_CURSOR):].encode()).decode()
    except (ValueError, UnicodeDecodeError) as exc:
        raise MCPError(INVALID_PARAMS, "This cursor is damaged; list again without one.") from exc


async def list_entries(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Middleware: add a page of the memory's entries to ``resources/list`` (the server's own
    resources come on the first page; ``nextCursor`` asks for the next)."""
    if ctx.method != "resources/list" or not isinstance(ctx.lifespan_context, AppState):
        return await call_next(ctx)
    after = _after((ctx.params or {}).get("cursor"))
    result = await call_next(ctx)
    if isinstance(result, BaseModel):
        result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if not isinstance(result, dict):
        return result
    entries, cursor = await ctx.lifespan_context.host.run(_list_entries, after, read_only=True)
    own = result.get("resources", []) if after is None else []
    listed = {**result, "resources": [*own, *entries]}
    listed.pop("nextCursor", None)
    return {**listed, "nextCursor": cursor} if cursor else listed


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
