"""The system prompts (one per mode) and the discovery prompt, offered as MCP prompts.

The prompts are markdown files in ``memdir/prompts/`` (data, written afresh from the
seed's description of the modes). The server's own mode prompt is also sent as its
``instructions`` at initialisation; all three are offered as prompts so a client can
show or switch them. The ``discover`` prompt takes the user's message and returns it
with the discovery reminders in front (the hookless way to get per-message discovery).
"""

from importlib import resources as importlib_resources
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import Prompt
from pydantic import Field

from memdir.server.modes import MODES, offers_skills
from memdir.server.state import app_state, run_memory_tool
from memdir.tools.discovery import discover

PROMPT_TITLES = {
    "assistant": "Memory assistant (learn and recall)",
    "retrieval": "Memory retrieval (read-only Q&A)",
    "researcher": "Memory researcher (extract and maintain knowledge)",
}


def system_prompt(mode: str) -> str:
    """The system prompt of ``mode`` (``assistant``, ``retrieval`` or ``researcher``)."""
    if mode not in MODES:
        raise ValueError(f"Unknown memory mode {mode!r}: use one of {', '.join(MODES)}.")
    return importlib_resources.files("memdir").joinpath("prompts", f"{mode}.md").read_text(encoding="utf-8")


def _mode_prompt(mode: str) -> Prompt:
    def render() -> str:
        return system_prompt(mode)

    return Prompt.from_function(
        render,
        name=mode,
        title=PROMPT_TITLES[mode],
        description=f"The system prompt for memdir's {mode} mode: how to use memory with the tools of that mode.",
    )


async def discover_prompt(
    message: Annotated[str, Field(description="The user's message, as written.")],
    ctx: Context,
) -> str:
    """The user's message with the discovery reminders (relevant skills and memories) in front of it."""
    state = app_state(ctx)
    reminders = await run_memory_tool(
        ctx, discover, message=message, settings=state.settings, include_skills=offers_skills(state.settings.server.mode)
    )
    return f"{reminders}\n\n{message}" if reminders else message


async def where_we_left_off_prompt(
    ctx: Context,
    project: Annotated[str | None, Field(description="Only episodes of this project (e.g. the repository name).")] = None,
) -> str:
    """The most recent episodes (of this project), within a token budget: where the last sessions left off."""
    from memdir.episodes.recall import where_we_left_off  # off the start-up path: used once a session

    reminder = await run_memory_tool(ctx, where_we_left_off, project=project)
    return reminder or "No episodes recorded yet: this is the first session memdir knows of."


def register(server: MCPServer[Any]) -> None:
    """Offer the three mode prompts, the discovery prompt and the session-start prompt."""
    for mode in MODES:
        server.add_prompt(_mode_prompt(mode))
    server.add_prompt(
        Prompt.from_function(
            discover_prompt,
            name="discover",
            title="Message with relevant memories",
            description="Your message, preceded by reminders of the skills and memory entries relevant to it.",
        )
    )
    server.add_prompt(
        Prompt.from_function(
            where_we_left_off_prompt,
            name="where_we_left_off",
            title="Where we left off",
            description="Start of a session: the most recent episodes of this project, within a token budget.",
        )
    )


__all__ = ["PROMPT_TITLES", "discover_prompt", "register", "system_prompt", "where_we_left_off_prompt"]
