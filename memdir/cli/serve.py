"""`memdir serve` (stdio, HTTP, or a front to a running server) and the `memdir discover` hook."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from memdir.cli.common import (
    AdminOption,
    AgentOption,
    RoleOption,
    RootOption,
    ServeRootOption,
    SharedOption,
    StoreOption,
    app,
    handle_errors,
    identity,
    load_settings,
)


class ServeMode(str, Enum):
    assistant = "assistant"
    retrieval = "retrieval"
    researcher = "researcher"


ModeOption = Annotated[
    Optional[ServeMode],
    typer.Option("--mode", help="Which memory tools to offer: assistant (default), retrieval (read-only) or researcher (all)."),
]


@app.command()
@handle_errors
def serve(
    root: ServeRootOption = None,
    mode: ModeOption = None,
    agent: AgentOption = None,
    store: StoreOption = None,
    workspace: Annotated[Optional[Path], typer.Option("--workspace", exists=True, file_okay=False, help="Directory the skills' workspace tools (Read, Write, Edit, Glob, Grep, Bash) act on (default: the current directory).")] = None,
    allow_bash: Annotated[bool, typer.Option("--allow-bash", help="Let skills run the shell commands their allowed_commands permit (off by default).")] = False,
    http: Annotated[bool, typer.Option("--http", help="Serve MCP over streamable HTTP (at /mcp) and the web view (at /) for many clients, instead of stdio.")] = False,
    host: Annotated[Optional[str], typer.Option("--host", help="With --http: the address to listen on (default: http_host, 127.0.0.1).")] = None,
    port: Annotated[Optional[int], typer.Option("--port", min=0, max=65535, help="With --http: the port (default: http_port, 8765; 0 = any free one).")] = None,
    read_only: Annotated[bool, typer.Option("--read-only", help="With --http: the web view only shows memory; it offers no edit, delete, unarchive or defrag.")] = False,
    connect: Annotated[Optional[str], typer.Option("--connect", metavar="URL", help="Forward this stdio session to a running `memdir serve --http` (e.g. http://127.0.0.1:8765/mcp).")] = None,
    token: Annotated[Optional[str], typer.Option("--token", help="With --connect: the bearer token (default: http_token, MEMDIR_HTTP_TOKEN).")] = None,
    role: RoleOption = None,
    admin: AdminOption = False,
    shared: SharedOption = False,
) -> None:
    """Run the MCP server over stdio (for Claude Desktop, Claude Code and other MCP clients), or over HTTP (--http)."""
    import sys

    from memdir.server.app import serve as run_server

    if http and connect:
        raise typer.BadParameter("--http serves, --connect forwards to a server: give one of them.")
    if (host is not None or port is not None or read_only) and not http:
        raise typer.BadParameter("--host, --port and --read-only go with --http.")
    if token is not None and not connect:
        raise typer.BadParameter("--token goes with --connect (a server reads its tokens from `memdir token`).")
    settings = load_settings(root, agent, store=store, mode=mode.value if mode else None, workspace=workspace,
                             allow_bash=True if allow_bash else None, web_read_only=True if read_only else None,
                             **identity(role, admin, shared))
    if connect:
        from memdir.server.connect import forward_stdio

        forward_stdio(connect, token or settings.server.http_token)
        return
    if http:
        from memdir.server.http import serve_http

        serve_http(settings, host=host, port=port)
        return
    if sys.stdin.isatty():  # started by hand: say why nothing happens, and how to stop
        print(
            "memdir serve: waiting for an MCP client on stdin (an MCP client starts this command itself; "
            "`claude mcp add memdir -- memdir serve` sets one up; docs/clients.md says more). Ctrl-C stops it.",
            file=sys.stderr,
        )
    run_server(settings)


@app.command("discover")
def discover_hook(
    root: RootOption = None,
    agent: AgentOption = None,
    mode: ModeOption = None,
) -> None:
    """Claude Code UserPromptSubmit hook: read the hook's JSON on stdin, print the relevant skills and memories.

    Prints the hook output that adds the reminders as context, or nothing when nothing
    is relevant. Never fails the user's prompt: errors go to stderr and the exit code is 0.
    """
    import sys

    try:
        raw = sys.stdin.read()
        try:
            payload = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            print(
                f"memdir discover: stdin is not JSON ({exc}); it expects Claude Code's UserPromptSubmit "
                'hook payload, e.g. {"prompt": "..."}. Nothing was added to the prompt.',
                file=sys.stderr,
            )
            return
        prompt = payload.get("prompt") if isinstance(payload, dict) else None
        if not isinstance(prompt, str) or not prompt.strip():
            return
        from memdir.core import hook_socket
        from memdir.tools.discovery import discover_in_store

        settings = load_settings(root, agent, mode=mode.value if mode else None)
        # A running server has the store open and the model loaded.
        request = {"kind": "discover", "prompt": prompt, "include_skills": settings.server.mode != "retrieval"}
        text = hook_socket.answer(settings, request, lambda: discover_in_store(settings, prompt))
        sys.stdout.write(hook_socket.hook_output("UserPromptSubmit", text))
    except Exception as exc:  # a hook must never block the user's prompt
        print(f"memdir discover: {type(exc).__name__}: {exc}", file=sys.stderr)
