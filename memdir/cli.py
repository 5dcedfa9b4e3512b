"""`memdir ...`: the command line. Thin: each command parses options and calls the layer below.

Errors from memdir (`MemdirError`) become a one-line message plus hint and exit code 1.
Heavy imports (onnxruntime, the MCP SDK) happen inside the commands that need them, so
`memdir --help` and the hook commands start fast.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table

from memdir.core.errors import MemdirError
from memdir.core.settings import Settings

app = typer.Typer(
    name="memdir",
    help="Persistent memory for LLM agents: a directory of markdown entries with local semantic search, served over MCP.",
    no_args_is_help=True,
    add_completion=False,
)
console = Console()
err_console = Console(stderr=True)

RootOption = Annotated[Optional[Path], typer.Option("--root", help="Memory root directory (default: MEMDIR_ROOT or the per-user data dir).")]
AgentOption = Annotated[Optional[str], typer.Option("--agent", help="Use this agent's own store under the root.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


def load_settings(root: Path | None = None, agent: str | None = None, **overrides: Any) -> Settings:
    """Settings from file + environment, with the command line's options on top."""
    values = {key: value for key, value in {"root": root, "agent": agent, **overrides}.items() if value is not None}
    return Settings(**values)


def handle_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn memdir's errors into a clear message and exit code 1 instead of a traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except MemdirError as exc:
            err_console.print(f"[red]Error:[/red] {exc.message}")
            if exc.hint:
                err_console.print(f"[dim]{exc.hint}[/dim]")
            raise typer.Exit(1) from exc

    return wrapper


def progress_bar() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=console
    )


@app.command()
@handle_errors
def setup(root: RootOption = None) -> None:
    """Find and load the embedding model, verify it works, and say where it came from."""
    from memdir.embeddings.resolve import resolve_model
    from memdir.embeddings.minilm import load_embedder

    settings = load_settings(root)
    resolved = resolve_model(settings.model_dir)
    console.print(f"Model: [bold]{resolved.model_id}[/bold]")
    console.print(f"From: {resolved.source}")
    with console.status("Loading the model with onnxruntime..."):
        embedder = load_embedder(model_dir=settings.model_dir, cache_dir=settings.cache_dir)
        vector = embedder.embed(["memdir setup check"])[0]
    console.print(f"Dimensions: {vector.shape[0]}, norm {float((vector ** 2).sum()) ** 0.5:.3f}")
    console.print("[green]✓ Semantic search is available.[/green]")


@app.command()
@handle_errors
def status(root: RootOption = None, agent: AgentOption = None, as_json: JsonOption = False) -> None:
    """Model, dimensions, root, entries and index freshness."""
    from memdir.memory import Memory

    with Memory.open(load_settings(root, agent)) as memory:
        memory.model.get()
        report = memory.status()
    data = {key: str(value) if isinstance(value, Path) else value for key, value in dataclasses.asdict(report).items()}
    if as_json:
        console.print_json(json.dumps(data))
        return
    table = Table(title="memdir status", show_header=False)
    for key, value in data.items():
        table.add_row(key.replace("_", " "), "" if value is None else str(value))
    console.print(table)
    if report.model_state != "ready":
        console.print(f"[yellow]Semantic search is unavailable ({report.reason}); search is keyword-only.[/yellow]")
    else:
        console.print("[green]Semantic search is available.[/green]")


@app.command("model-path")
@handle_errors
def model_path() -> None:
    """Print the directory the embedding model is loaded from."""
    from memdir.embeddings.resolve import resolve_model

    print(resolve_model(load_settings().model_dir).directory)


@app.command()
@handle_errors
def rebuild(
    directory: Annotated[Optional[Path], typer.Argument(help="Memory root to rebuild (default: the configured root).")] = None,
    agent: AgentOption = None,
    missing_only: Annotated[bool, typer.Option("--missing-only", help="Only embed entries without a current vector.")] = False,
) -> None:
    """Rebuild the derived index and re-embed every entry (after a model or settings change)."""
    from memdir.memory import Memory

    with Memory.open(load_settings(directory, agent)) as memory, progress_bar() as bar:
        task = bar.add_task("Embedding", total=None)
        count = memory.rebuild(progress=lambda done, total: bar.update(task, completed=done, total=total), everything=not missing_only)
    if memory.model.state.value != "ready":
        console.print(f"[yellow]Index rebuilt; no model available ({memory.model.reason}), so nothing was embedded.[/yellow]")
    else:
        console.print(f"[green]Rebuilt: {count} entries embedded.[/green]")


@app.command()
@handle_errors
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    root: RootOption = None,
    agent: AgentOption = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", help="Number of results.")] = 10,
    type_: Annotated[Optional[list[str]], typer.Option("--type", help="Only these entry types (repeatable).")] = None,
    prefix: Annotated[Optional[str], typer.Option("--prefix", help="Only entries under this folder.")] = None,
    tag: Annotated[Optional[list[str]], typer.Option("--tag", help="Only entries with this tag (repeatable).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Hybrid search with each result's score breakdown."""
    from memdir.memory import Memory

    with Memory.open(load_settings(root, agent)) as memory:
        results = memory.search(query, top_k=top_k, types=type_, path_prefix=prefix, tags=tag)
        state = memory.model.state.value
    if as_json:
        console.print_json(json.dumps([result.to_dict() for result in results]))
        return
    table = Table(title=f"Results for {query!r}" + ("" if state == "ready" else " (keyword only)"))
    for column in ("#", "path", "title", "score", "semantic", "keyword", "tags"):
        table.add_column(column)
    for rank, result in enumerate(results, start=1):
        table.add_row(
            str(rank), result.path, result.title, f"{result.score:.3f}",
            f"{result.semantic:.3f}", f"{result.keyword:.3f}", f"{result.tag:.3f}",
        )
    console.print(table)


# Commands added by the server, defrag and episodes modules are registered below.
