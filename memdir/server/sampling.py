"""The client's model, asked through MCP sampling from a tool running on the memory thread.

Tool functions are synchronous and run on `MemoryHost`'s worker thread; they take an
optional ``ask(prompt, max_tokens) -> reply`` (`memdir.threads.compaction.Ask`, the same
shape `memdir.episodes.sampling` uses). `client_ask` builds one for the calling client:
None when the client did not declare sampling, so the caller writes its deterministic
fallback at once; otherwise each call runs ``sampling/createMessage`` on the server's
event loop (which is free: the tool awaits the worker thread) and waits for the reply.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types import SamplingMessage, TextContent

if TYPE_CHECKING:
    from memdir.threads.compaction import Ask


def client_ask(ctx: Context, timeout: float) -> Ask | None:
    """``ask`` through the client's model for this request, or None when the client offers no sampling."""
    return session_ask(ctx.session, timeout)


def offers_sampling(session: Any) -> bool:
    """True when the client on ``session`` declared the sampling capability."""
    capabilities = session.client_capabilities
    return capabilities is not None and capabilities.sampling is not None


def session_ask(session: Any, timeout: float) -> Ask | None:
    """``ask`` through the model of the client on ``session`` (a `ServerSession`), from a thread
    while this event loop runs; None when that client offers no sampling. Call it on the loop.

    The scheduler uses it between requests, with the session of the last client that offered
    sampling: a call to a client gone since fails, and its caller falls back.
    """
    if not offers_sampling(session):
        return None
    token = anyio.lowlevel.current_token()

    async def create(prompt: str, max_tokens: int) -> str | None:
        with anyio.fail_after(timeout), warnings.catch_warnings():
            # The SDK marks sampling deprecated for 2026-07-28 clients; older clients still offer it,
            # and the capability check above decides, not the warning.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            result = await session.create_message(
                [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))], max_tokens=max_tokens
            )
        content = result.content
        return content.text if isinstance(content, TextContent) else None

    def ask(prompt: str, max_tokens: int) -> str | None:
        return anyio.from_thread.run(create, prompt, max_tokens, token=token)

    return ask


__all__ = ["client_ask", "offers_sampling", "session_ask"]
