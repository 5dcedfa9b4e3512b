"""Prefetching when a session's role is set: the other change of phase a running server sees.

A client whose HTTP token gives it a role other than the server's starts a session in that role,
whose view the server's own warming at start (`memdir.server.prefetch.warm`) did not cover.
Before that session's first tool call or resource read, the server warms the cache as it does
at its start, in the client's role. (A server's mode is fixed when it starts: a new mode is a
new server, which warms when it opens; a loaded skill warms with `memdir.server.prefetch.warm_for_phase`.)
"""

from __future__ import annotations

import logging
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext

from memdir.core.identity import parse_role
from memdir.server.prefetch import warm
from memdir.server.state import HTTP_CLIENT, AppState

log = logging.getLogger(__name__)


USES_MEMORY = frozenset({"tools/call", "resources/read"})
"""The requests that read the memory: a session's first one warms the cache for its role."""


async def warm_for_role(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: before a session's first call that uses the memory, if its HTTP token gives
    it a role other than the server's, prefetch what that role is likely to read first."""
    state = ctx.lifespan_context
    client = HTTP_CLIENT.get()
    if ctx.method in USES_MEMORY and isinstance(state, AppState) and client is not None and client.role:
        session = state.sessions.for_context(ctx)
        if not session.role_warmed:
            session.role_warmed = True
            if parse_role(client.role) != parse_role(state.settings.roles.role):
                try:  # run as the client (`MemoryHost.run`): its role's view
                    await state.host.run(warm, read_only=True, writer=session)
                except Exception:  # a guess that failed must not fail the call
                    log.warning("prefetching for a client's role failed", exc_info=True)
    return await call_next(ctx)


__all__ = ["USES_MEMORY", "warm_for_role"]
