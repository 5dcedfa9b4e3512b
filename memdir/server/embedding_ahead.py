"""A search's query starts embedding as its call comes in, before the call reaches the memory's threads.

The model's run is the longest part of a search on a small store, and the search's vector walk waits
for it. Started by the search itself (`memdir.memory.Memory.reading`), it begins only once the call
has had its arguments checked, crossed to a reader thread, and waited there for the writes its session
sent before it (an agent often searches right after it wrote). Started here, from the request as it
arrives on the event loop, it runs while all that happens: the search then finds its query's embedding
under way, or done (`memdir.search.hybrid.HybridSearcher.embed_soon`), instead of starting its own.
A call that is then refused (bad arguments) has cost one embedding of its text, as a search of it would.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from memdir.server.state import AppState

SEARCHED = {"MemorySearch": "query", "MemoryDiscover": "message"}
"""The tools whose call searches by meaning, and the argument holding what it searches."""


def searched_text(tool: str, argument: str) -> str:
    """The text ``tool`` embeds when asked to search ``argument`` (discovery: the message as typed). (The
    tool's module is imported here, at a call: a server lists its tools before it loads their modules.)"""
    if tool == "MemorySearch":
        from memdir.tools.memory_search import searched_text as of_query

        return of_query(argument)
    return argument


async def embed_ahead(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: a call of a `SEARCHED` tool starts embedding its text now, if the memory is
    open (a model that is not ready yet is left alone: the search will be by keywords)."""
    state, params = ctx.lifespan_context, ctx.params or {}
    tool, arguments = str(params.get("name")), params.get("arguments")
    if ctx.method == "tools/call" and tool in SEARCHED and isinstance(state, AppState) and isinstance(arguments, Mapping):
        text = arguments.get(SEARCHED[tool])
        if isinstance(text, str) and text.strip() and (memory := state.host.opened()) is not None:
            memory.embed_soon(searched_text(tool, text))
    return await call_next(ctx)


__all__ = ["SEARCHED", "embed_ahead"]
