"""`memdir ingest` and the Claude Code session hooks: episodes from conversations."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from memdir.cli.common import AgentOption, JsonOption, RootOption, StoreOption, app, console, handle_errors, load_settings

episode_hooks = typer.Typer(
    help="Claude Code hook commands: read the hook's JSON payload on stdin; never fail the session.",
    no_args_is_help=True,
    rich_markup_mode=None,
)


app.add_typer(episode_hooks, name="hook")


@app.command("ingest")
@handle_errors
def ingest_command(
    transcript: Annotated[Path, typer.Argument(help="Claude Code transcript (.jsonl) or a JSON list of {role, content, timestamp}.")],
    root: RootOption = None,
    agent: AgentOption = None,
    store: StoreOption = None,
    session_id: Annotated[Optional[str], typer.Option("--session-id", help="Session id (default: the transcript's own, else the file name).")] = None,
    cwd: Annotated[Optional[str], typer.Option("--cwd", help="The session's working directory (names the project) when the transcript lacks it.")] = None,
    no_topic: Annotated[bool, typer.Option("--no-topic", help="Cut at pauses and markers only (no model load).")] = False,
    as_json: JsonOption = False,
) -> None:
    """Split a transcript into episodes and store them under experience/episodes/ (re-ingesting adds nothing)."""
    from memdir.episodes.ingest import ingest
    from memdir.memory import Memory

    with Memory.open(load_settings(root, agent, store=store)) as memory:
        report = ingest(memory, transcript, session_id=session_id, cwd=cwd, use_model=not no_topic)
    if as_json:
        typer.echo(json.dumps({"created": report.created, "updated": report.updated, "unchanged": report.unchanged}, indent=2))
        return
    for label, paths in (("new", report.created), ("updated", report.updated)):
        for path in paths:
            console().print(f"{label}: memory://{path}")
    console().print(f"[green]{report.describe()}.[/green]")


@episode_hooks.command("session-end")
def hook_session_end(root: RootOption = None, agent: AgentOption = None) -> None:
    """SessionEnd/Stop hook: ingest the session's transcript into episodes (errors go to stderr, exit 0)."""
    import sys

    from memdir.episodes.hooks import session_end

    raise typer.Exit(session_end(sys.stdin.read(), lambda: load_settings(root, agent), err=sys.stderr))


@episode_hooks.command("session-start")
def hook_session_start(root: RootOption = None, agent: AgentOption = None) -> None:
    """SessionStart hook: print the "where we left off" reminder as additionalContext (nothing when there are no episodes)."""
    import sys

    from memdir.episodes.hooks import session_start

    raise typer.Exit(session_start(sys.stdin.read(), lambda: load_settings(root, agent), out=sys.stdout, err=sys.stderr))
