"""`memdir thread …`: working-memory threads from the command line (list, show, replay, compact, step, fork, episodes).

A typer sub-app, registered by `memdir.cli` under the name ``thread``. Each command opens
the memory, calls the thread tools or `memdir.threads.manager.ThreadManager`, and prints.
Messages queued by a stepping server wait on disk, so ``step`` here processes them too.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memdir.cli.common import AgentOption, JsonOption, RootOption, app, console, handle_errors, load_settings

if TYPE_CHECKING:
    from pathlib import Path

    from memdir.episodes.ingest import Transcript
    from memdir.memory import Memory
    from memdir.threads.model import ThreadState

thread_app = typer.Typer(
    help="Working-memory threads: event logs, compaction and context windows.", no_args_is_help=True, rich_markup_mode=None
)
ThreadArgument = Annotated[str, typer.Argument(help="The thread id.")]


def _open(root: Path | None, agent: str | None, *, load_model: bool = False) -> Memory:
    from memdir.memory import Memory

    return Memory.open(load_settings(root, agent), load_model=load_model)


def _control(root: Path | None, agent: str | None, thread: str, action: str, value: str | None = None) -> None:
    """Run one ThreadControl action and print its answer."""
    from memdir.tools.thread_control import thread_control

    with _open(root, agent) as memory:
        typer.echo(thread_control(memory, thread, action, value))


@thread_app.command("list")
@handle_errors
def list_threads(root: RootOption = None, agent: AgentOption = None, as_json: JsonOption = False) -> None:
    """Every thread of the memory: chunks, events, strategy, mode."""
    from memdir.threads.manager import manager_for
    from memdir.tools.thread_list import thread_list

    with _open(root, agent) as memory:
        if not as_json:
            typer.echo(thread_list(memory))
            return
        manager = manager_for(memory)
        rows = []
        for thread in manager.ids():
            state = manager.state(thread)
            rows.append({"thread": thread, "chunks": len(state.chunks), "events": state.version, "strategy": state.strategy,
                         "mode": state.mode, "forked_from": state.forked_from})
        typer.echo(json.dumps(rows, indent=2))


@thread_app.command("show")
@handle_errors
def show(
    thread: ThreadArgument,
    root: RootOption = None,
    agent: AgentOption = None,
    budget: Annotated[Optional[int], typer.Option("--budget", help="Also print the context window of this many tokens.")] = None,
    query: Annotated[Optional[str], typer.Option("--query", help="The query for the semantic strategy.")] = None,
) -> None:
    """The thread's state (version, strategy, mode, last chunks), and with --budget its context window."""
    from memdir.tools.thread_context import thread_context
    from memdir.tools.thread_control import thread_control

    with _open(root, agent, load_model=budget is not None) as memory:
        typer.echo(thread_control(memory, thread, "state"))
        if budget is not None:
            typer.echo("")
            typer.echo(thread_context(memory, thread, budget, query))


@thread_app.command("replay")
@handle_errors
def replay(thread: ThreadArgument, root: RootOption = None, agent: AgentOption = None,
           events: Annotated[bool, typer.Option("--events", help="Print one line per event.")] = False) -> None:
    """Rebuild the thread's state from its log alone and check it against the state read incrementally."""
    from memdir.threads.manager import manager_for

    with _open(root, agent) as memory:
        manager = manager_for(memory)
        rebuilt, current = manager.replay(thread), manager.state(thread)
        if events:
            for event in manager.events(thread):
                detail = event.get("key") or event.get("chunk", {}).get("id") or ", ".join(event.get("ids", []))
                typer.echo(f"{event.get('seq')}\t{event.get('at', '')}\t{event.get('op')}\t{detail}")
    verdict = "identical" if rebuilt == current else "DIFFERENT"
    console().print(f"Replayed {rebuilt.version} events: {len(rebuilt.chunks)} chunks, strategy {rebuilt.strategy}, "
                    f"mode {rebuilt.mode}; {verdict} to the incremental state.")
    if rebuilt != current:
        raise typer.Exit(1)


@thread_app.command("compact")
@handle_errors
def compact(thread: ThreadArgument, root: RootOption = None, agent: AgentOption = None) -> None:
    """Compact the thread now (an extractive summary: no client model is at hand here)."""
    _control(root, agent, thread, "compact")


@thread_app.command("step")
@handle_errors
def step(thread: ThreadArgument, root: RootOption = None, agent: AgentOption = None) -> None:
    """One step of a stepping thread: a due compaction first, else the next queued message."""
    _control(root, agent, thread, "step")


@thread_app.command("fork")
@handle_errors
def fork(thread: ThreadArgument, new_thread: Annotated[str, typer.Argument(help="The new thread's id.")],
         root: RootOption = None, agent: AgentOption = None) -> None:
    """Copy the thread's events into a new thread (its strategy and mode too)."""
    _control(root, agent, thread, "fork", new_thread)


@thread_app.command("strategy")
@handle_errors
def strategy(thread: ThreadArgument, name: Annotated[str, typer.Argument(help="virtual, fragment or semantic (hnsw).")],
             root: RootOption = None, agent: AgentOption = None) -> None:
    """Switch the thread's context strategy (every event is kept)."""
    _control(root, agent, thread, "strategy", name)


@thread_app.command("mode")
@handle_errors
def mode(thread: ThreadArgument, value: Annotated[str, typer.Argument(help="auto or stepping.")],
         root: RootOption = None, agent: AgentOption = None) -> None:
    """Set the thread's execution mode (kept in its log: a server resumes in it)."""
    _control(root, agent, thread, "mode", value)


def thread_transcript(thread: str, state: ThreadState) -> Transcript:
    """The thread's chunks as a transcript the episodes code can cut (compacted summaries included as they are)."""
    from memdir.episodes.ingest import Transcript
    from memdir.episodes.model import Message

    messages = []
    for chunk in state.chunks:
        moment = datetime.fromisoformat(chunk.at.replace("Z", "+00:00")) if chunk.at else None
        kind = "tool_result" if chunk.role == "tool" else ("tool_use" if chunk.call_id else "text")
        messages.append(Message(role=chunk.role, text=chunk.content, timestamp=moment, kind=kind, uid=chunk.id))
    return Transcript(session_id=f"thread-{thread}", messages=messages)


@thread_app.command("episodes")
@handle_errors
def episodes(thread: ThreadArgument, root: RootOption = None, agent: AgentOption = None,
             no_topic: Annotated[bool, typer.Option("--no-topic", help="Cut at pauses and markers only (no model load).")] = False) -> None:
    """Turn a (closed) thread into episodes under experience/episodes/, like `memdir ingest` (re-running adds nothing)."""
    from memdir.episodes.ingest import ingest_transcript_object
    from memdir.threads.manager import manager_for

    with _open(root, agent, load_model=not no_topic) as memory:
        transcript = thread_transcript(thread, manager_for(memory).state(thread))
        report = ingest_transcript_object(memory, transcript, use_model=not no_topic)
    for label, paths in (("new", report.created), ("updated", report.updated)):
        for path in paths:
            console().print(f"{label}: memory://{path}")
    console().print(f"[green]{report.describe()}.[/green]")


app.add_typer(thread_app, name="thread")
