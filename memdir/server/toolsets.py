"""LoadSkill over MCP: a loaded skill swaps the workspace tools a client session sees.

The SDK keeps one global tool list, so memdir registers every workspace tool once and
decides per client session what is visible:

* ``tools/list`` passes through `filter_tool_list` (a server middleware), which removes
  the workspace tools that the session's loaded skill does not list;
* each workspace tool refuses calls from a session whose toolset does not hold it
  (`memdir.server.workspace`), so a client cannot call a tool it was never shown;
* LoadSkill validates the skill (`memdir.tools.load_skill`), makes its tools the
  session's toolset — replacing the previous skill's, never touching the memory tools or
  LoadSkill — sends ``notifications/tools/list_changed`` when the visible list changed,
  and appends SwarmMemory's "Your available tools have been updated." reminder.
"""

import logging
from typing import Annotated, Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

from memdir.core.errors import MemdirError
from memdir.server.modes import parse_docstring
from memdir.server.prefetch import warm_for_phase
from memdir.server.state import AppState, app_state, tool_error
from memdir.tools.formatting import system_reminder
from memdir.tools.load_skill import load_skill, toolset_reminder

log = logging.getLogger(__name__)


async def filter_tool_list(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Middleware: hide from ``tools/list`` the workspace tools the session's skill does not list."""
    result = await call_next(ctx)
    if ctx.method != "tools/list":
        return result
    state = ctx.lifespan_context
    if not isinstance(state, AppState) or not state.workspace_tools:
        return result
    visible = set(state.visible_tools(state.sessions.for_context(ctx)))
    hidden = set(state.workspace_tools) - visible
    if isinstance(result, BaseModel):
        result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(result, dict) and isinstance(result.get("tools"), list):
        result = {**result, "tools": [tool for tool in result["tools"] if tool.get("name") not in hidden]}
    return result


async def notify_tools_changed(ctx: Context) -> None:
    """Tell the client its tool list changed, in both protocol eras (best effort)."""
    try:
        await ctx.session.send_tool_list_changed()  # handshake-era clients (Claude Desktop, Claude Code)
    except Exception:  # notifications are advisory: never fail the tool call over one
        log.debug("could not send notifications/tools/list_changed", exc_info=True)
    try:
        await ctx.notify_tools_changed()  # 2026-era clients listening on subscriptions/listen
    except Exception:
        log.debug("could not publish the tools-changed event", exc_info=True)


def load_skill_tool() -> Any:
    """The LoadSkill tool function (registered in every mode that offers skills)."""
    doc = parse_docstring(load_skill)

    async def LoadSkill(  # noqa: N802 - the tool's name
        file_path: Annotated[str, Field(description=doc.params.get("file_path") or "The skill's path under skill/.")],
        ctx: Context,
    ) -> str:
        state = app_state(ctx)
        current = state.sessions.for_context(ctx)
        available = {*state.tools, *state.workspace_tools}
        try:
            skill = await state.host.run(load_skill, current.session, file_path, available)
            tools = [name for name in skill.tools if name in state.workspace_tools]
        except MemdirError as exc:
            raise tool_error(exc) from exc
        try:  # a new phase: warm the cache for what it will read (a guess: it never fails the load)
            await state.host.run(warm_for_phase, skill.about, read_only=True, writer=current)
        except Exception:
            log.warning("prefetching for the loaded skill failed", exc_info=True)
        before = state.visible_tools(current)
        current.session.activate_skill(skill.path, tools, skill.permissions)
        after = state.visible_tools(current)
        if after != before:
            await notify_tools_changed(ctx)
        text = f"{skill.text}\n\n{toolset_reminder(tools, after)}"
        if "Bash" in tools and not state.settings.server.allow_bash:
            text += "\n\n" + system_reminder(
                "Bash is listed by this skill but disabled on this memdir server: its calls will be refused.",
                "Do the steps that need a shell another way, or ask the user to start memdir with --allow-bash.",
            )
        return text

    LoadSkill.__doc__ = doc.description
    return LoadSkill


def install(server: MCPServer[Any]) -> None:
    """Add the per-session tool filter to ``server`` (LoadSkill itself is registered with the mode's tools)."""
    server.middleware.append(filter_tool_list)


__all__ = ["filter_tool_list", "install", "load_skill_tool", "notify_tools_changed"]
