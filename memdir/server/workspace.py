"""The workspace tools over MCP: Read, Write, Edit, Glob, Grep, Bash on ``Settings.workspace``.

Offered in every mode with LoadSkill, hidden from every session until a loaded skill lists
them (`memdir.server.toolsets`); registered with the SDK at their first call
(`memdir.server.registration`). Each call checks the session's toolset, then runs the plain
function from `memdir.workspace.tools` / `memdir.workspace.bash` on a worker thread
with the loaded skill's permissions — the functions enforce them, not this layer.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field, WithJsonSchema

from memdir.core.errors import MemdirError
from memdir.server.state import app_state, tool_error
from memdir.workspace import bash as workspace_bash
from memdir.workspace import tools as ws

T = TypeVar("T")

FilePath = Annotated[str, Field(description="The file: a path relative to the workspace (or absolute, inside it).")]


async def _run(ctx: Context, tool: str, fn: Callable[..., T], /, *args: Any, with_reads: bool = True) -> T:
    """Check ``tool`` is in the session's toolset, then run ``fn(workspace, [reads,] rules, *args)``."""
    state = app_state(ctx)
    current = state.sessions.for_context(ctx)
    if tool not in current.session.skill_tools:
        raise ToolError(
            f"{tool} is not in your current toolset.\n"
            "Workspace tools become available when a loaded skill lists them: "
            'find skills with MemoryGlob(pattern: "skill/**") and load one with LoadSkill.'
        )
    try:
        rules = ws.session_rules(current.session, tool, state.workspace.regex_budget)
        lead = (state.workspace, current.file_reads, rules) if with_reads else (state.workspace, rules)
        return await anyio.to_thread.run_sync(functools.partial(fn, *lead, *args))
    except MemdirError as exc:
        raise tool_error(exc) from exc


async def Read(  # noqa: N802 - tool names are SwarmSDK's
    file_path: FilePath,
    ctx: Context,
    offset: Annotated[int | None, WithJsonSchema({"type": "integer"}), Field(description="First line to show (1-based).")] = None,
    limit: Annotated[int | None, WithJsonSchema({"type": "integer"}), Field(description="How many lines to show (default 2000).")] = None,
) -> str:
    """Read a text file from the workspace, with line numbers.

    Read a file before changing it: Write (of an existing file) and Edit refuse files
    you have not read in this session, or that changed since.
    """
    return await _run(ctx, "Read", ws.read_file, file_path, offset, limit)


async def Write(  # noqa: N802
    file_path: FilePath,
    content: Annotated[str, Field(description="The complete new content of the file.")],
    ctx: Context,
) -> str:
    """Create a file in the workspace, or replace one you have read; parent folders are created."""
    return await _run(ctx, "Write", ws.write_file, file_path, content)


async def Edit(  # noqa: N802
    file_path: FilePath,
    old_string: Annotated[str, Field(description="The exact text to replace (copied from Read's output, without line numbers).")],
    new_string: Annotated[str, Field(description="The replacement text; must differ from old_string.")],
    ctx: Context,
    replace_all: Annotated[bool, Field(description="Replace every occurrence (default false: old_string must be unique).")] = False,
) -> str:
    """Replace exact text in a workspace file you have read in this session."""
    return await _run(ctx, "Edit", ws.edit_file, file_path, old_string, new_string, replace_all)


async def Glob(  # noqa: N802
    pattern: Annotated[str, Field(description='A glob such as "**/*.py" or "src/*.ts" (** crosses folders).')],
    ctx: Context,
    path: Annotated[str | None, WithJsonSchema({"type": "string"}), Field(description="Folder to search in (default: the workspace).")] = None,
) -> str:
    """Find workspace files by name pattern; newest first, at most 100."""
    return await _run(ctx, "Glob", ws.glob_files, pattern, path, with_reads=False)


async def Grep(  # noqa: N802
    pattern: Annotated[str, Field(description="A regular expression (Python syntax).")],
    ctx: Context,
    path: Annotated[str | None, WithJsonSchema({"type": "string"}), Field(description="File or folder to search (default: the workspace).")] = None,
    glob: Annotated[str | None, WithJsonSchema({"type": "string"}), Field(description='Only files matching this glob, e.g. "*.py".')] = None,
    case_insensitive: Annotated[bool, Field(description="Ignore case (default false).")] = False,
    output_mode: Annotated[
        str,
        WithJsonSchema({"type": "string", "enum": ["files_with_matches", "content", "count"]}),
        Field(description="files_with_matches (default), content (matching lines) or count."),
    ] = "files_with_matches",
) -> str:
    """Search the contents of workspace files with a regular expression."""
    return await _run(ctx, "Grep", ws.grep_files, pattern, path, glob, case_insensitive, output_mode, with_reads=False)


async def Bash(  # noqa: N802
    command: Annotated[str, Field(description="The shell command to run in the workspace.")],
    ctx: Context,
    timeout: Annotated[float | None, WithJsonSchema({"type": "number"}), Field(description="Seconds before it is stopped (capped by the server).")] = None,
) -> str:
    """Run a shell command in the workspace.

    Only commands the loaded skill allows (its allowed_commands patterns) run, and only
    when the memdir server was started with --allow-bash; everything else is refused.
    Returns the combined output, and the exit code when it is not 0.
    """
    return await _run(ctx, "Bash", workspace_bash.run_bash, command, timeout, with_reads=False)


TOOL_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "Read": Read, "Write": Write, "Edit": Edit, "Glob": Glob, "Grep": Grep, "Bash": Bash,
}


__all__ = ["TOOL_FUNCTIONS"]
