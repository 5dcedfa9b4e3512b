"""`memdir setup`, `status`, `model-path`, `rebuild`: the model and the root's health."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Annotated, Any

import typer

from memdir.cli.common import AgentOption, DirArgument, JsonOption, RootOption, StoreOption, app, console, handle_errors, load_settings, progress_bar, root_of
from memdir.core.errors import RootNotFoundError
from memdir.core.units import plural


@app.command()
@handle_errors
def setup(root: RootOption = None) -> None:
    """Find the embedding model (fetching its files once if needed), check it works, say where it is."""
    from memdir.embeddings.resolve import load_embedder, resolve_model

    settings = load_settings(root)
    with console().status("Looking for the model (fetching it the first time takes a minute)..."):
        resolved = resolve_model(settings.embeddings.model_dir, settings.model_wanted, download=settings.embeddings.model_download,
                                 cache_dir=settings.storage.cache_dir, fetch=True)
    console().print(f"Model: [bold]{resolved.model_id}[/bold]")
    console().print(f"From: {resolved.source}")
    with console().status("Loading the model with onnxruntime..."):
        embedder = load_embedder(
            model_dir=settings.embeddings.model_dir, cache_dir=settings.storage.cache_dir, batch_size=settings.embeddings.batch_size,
            threads=settings.embeddings.threads, model_id=settings.model_wanted,
        )
        vector = embedder.embed(["memdir setup check"])[0]
    console().print(f"Dimensions: {vector.shape[0]}, norm {float((vector ** 2).sum()) ** 0.5:.3f}")
    console().print("[green]✓ Semantic search is available.[/green]")


@app.command()
@handle_errors
def status(root: RootOption = None, agent: AgentOption = None, store: StoreOption = None, as_json: JsonOption = False) -> None:
    """Model, dimensions, root, entries, index freshness and the prefetch cache's hit rate."""
    from memdir.memory import Memory

    with Memory.open(load_settings(root, agent, store=store), read_only=True) as memory:  # looking changes nothing
        memory.model.get()
        report = memory.status()
    data = {key: str(value) if isinstance(value, Path) else value for key, value in dataclasses.asdict(report).items()}
    if as_json:
        console().print_json(json.dumps(data))
        return
    from rich.table import Table

    table = Table(title="memdir status", show_header=False)
    data.pop("prefetch")  # (a line of its own below)
    for key, value in data.items():
        table.add_row("built-in entries" if key == "builtins" else key.replace("_", " "), "" if value is None else str(value))
    table.add_row("prefetch hit rate", prefetch_line(report.prefetch))
    console().print(table)
    if report.model_state != "ready":  # the reason is in the table (and a failed load logged it): not again
        console().print("[yellow]Search is keyword-only (see reason).[/yellow]")
    else:
        console().print("[green]Semantic search is available.[/green]")
        if report.stale:
            console().print(f"{plural(report.stale, 'entry needs', 'entries need')} embedding: run `memdir rebuild --missing-only`.")


def prefetch_line(report: Any) -> str:
    """The prefetch cache's figures in one line (`memdir.storage.entry_cache.PrefetchReport`)."""
    if report is None:
        return "no reads served yet (a server's cache reports here once it has served some)"
    return (f"{report.hit_rate:.1%} ({report.hits} hits, {report.misses} misses; {report.entries} of "
            f"{report.capacity} entries cached, {report.prefetched} prefetched) — {report.agent}, pid {report.pid}, "
            f"{report.at[:19].replace('T', ' ')} UTC")


@app.command("model-path")
@handle_errors
def model_path() -> None:
    """Print the directory the embedding model is loaded from."""
    from memdir.embeddings.resolve import resolve_model

    settings = load_settings()
    print(resolve_model(settings.embeddings.model_dir, settings.model_wanted, cache_dir=settings.storage.cache_dir).directory)


@app.command()
@handle_errors
def rebuild(
    directory: DirArgument = None,
    root: RootOption = None,
    agent: AgentOption = None,
    store: StoreOption = None,
    missing_only: Annotated[bool, typer.Option("--missing-only", help="Only embed entries without a current vector.")] = False,
) -> None:
    """Rebuild the derived index and re-embed every entry (after a model or settings change)."""
    from memdir.memory import Memory

    settings = load_settings(root_of(directory, root), agent, store=store)
    if not settings.storage.store and not settings.store_root.is_dir():  # a mistyped DIR would become an empty root
        raise RootNotFoundError(settings.store_root)
    with Memory.open(settings) as memory, progress_bar() as bar:
        task = bar.add_task("Embedding", total=None)
        done = memory.rebuild(progress=lambda done, total: bar.update(task, completed=done, total=total), everything=not missing_only)
    if memory.model.state.value != "ready":  # a missing model was logged with its reason when it failed to load
        why = f" ({memory.model.reason})" if memory.model.state.value == "disabled" else ""
        console().print(f"[yellow]Index rebuilt; no model available{why}, so nothing was embedded.[/yellow]")
    else:
        builtins = f" (and {plural(done.builtins, 'built-in entry', 'built-in entries')})" if done.builtins else ""
        console().print(f"[green]Index rebuilt: {plural(done.entries, 'entry', 'entries')} embedded{builtins}.[/green]")
