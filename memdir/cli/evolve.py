"""`memdir evolve …` and `memdir unarchive PATH`: the evolution jobs by hand (`memdir.evolution`).

Registered by `memdir.cli`. A run by hand covers the whole store (no batch size or timeout
unless given) and is recorded in the history like the scheduler's runs.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from memdir.cli.common import (
    AdminOption,
    AgentOption,
    JsonOption,
    RoleOption,
    RootOption,
    SharedOption,
    app,
    console,
    handle_errors,
    identity,
    load_settings,
)
from memdir.core.units import plural

if TYPE_CHECKING:
    from memdir.evolution.history import RunRecord

DETAILS_SHOWN = 50
UNDOABLE = ("archival", "consolidation")


class JobName(str, Enum):
    importance = "importance"
    links = "links"
    archival = "archival"
    consolidation = "consolidation"
    all = "all"


def _run_line(record: RunRecord) -> str:
    seconds = (datetime.fromisoformat(record.finished) - datetime.fromisoformat(record.started)).total_seconds()
    dry = " (dry run: nothing changed)" if record.dry_run else ""
    verb = "would change" if record.dry_run else "changed"
    line = f"{record.job}: {record.status}, {plural(record.processed, 'item')} looked at, {record.changed} {verb} in {seconds:.1f} s{dry}"
    if record.error:
        line += f"\n  error: {record.error}"
    if record.cursor:
        line += f"\n  stopped after {record.cursor}; the next run goes on from there"
    return line


def _show_history(root: Path | None, agent: str | None, as_json: bool, limit: int) -> None:
    from memdir.evolution.history import read_runs
    from memdir.storage.stores import is_postgres, open_records

    settings = load_settings(root, agent)
    kept = is_postgres(settings.storage.store.strip()) or settings.store_root.is_dir()
    runs = read_runs(open_records(settings))[-limit:] if kept else []
    if as_json:
        typer.echo(json.dumps([run.to_json() for run in runs], indent=2))
        return
    if not runs:
        typer.echo("No evolution job has run on this memory yet (`memdir evolve all --dry-run` shows what they would do).")
        return
    from rich.table import Table

    table = Table(title="evolution job runs (oldest first)")
    for column in ("job", "started", "finished", "status", "processed", "changed", "error"):
        table.add_column(column)
    for run in runs:
        status = f"{run.status} (dry run)" if run.dry_run else run.status
        table.add_row(run.job, run.started[:19], run.finished[:19], status, str(run.processed), str(run.changed), run.error or "")
    console().print(table)


@app.command()
@handle_errors
def evolve(
    job: Annotated[Optional[JobName], typer.Argument(help="importance, links, archival, consolidation or all.", show_default=False)] = None,
    root: RootOption = None,
    agent: AgentOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what the job would change; change nothing.")] = False,
    history: Annotated[bool, typer.Option("--history", help="Show the record of job runs instead.")] = False,
    undo: Annotated[bool, typer.Option("--undo", help="Revert the last live archival or consolidation run instead.")] = False,
    force: Annotated[bool, typer.Option("--force", help="With --undo: also overwrite entries changed after that run.")] = False,
    batch_size: Annotated[Optional[int], typer.Option("--batch-size", min=1, help="Most items one run handles (default: all).")] = None,
    timeout: Annotated[Optional[float], typer.Option("--timeout", min=0.0, help="Seconds after which a run stops between items (default: none).")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="With --history: the most recent runs shown; else the changes listed per job.")] = DETAILS_SHOWN,
    role: RoleOption = None,
    admin: AdminOption = False,
    shared: SharedOption = False,
    as_json: JsonOption = False,
) -> None:
    """Run the evolution jobs by hand: importance recalibration, link decay, archival, consolidation.

    Jobs change only what the caller may change: as an agent, its own entries and ownerless ones;
    with --admin, every entry."""
    if history:
        _show_history(root, agent, as_json, limit)
        return
    from memdir.memory import Memory

    if undo:
        from memdir.optimization.journal import undo_last

        with Memory.open(load_settings(root, agent, **identity(role, admin, shared)), load_model=False) as memory:
            result = undo_last(memory, force=force, actions=UNDOABLE)
        typer.echo(json.dumps(dataclasses.asdict(result), indent=2) if as_json else result.to_markdown())
        return
    if job is None:
        raise typer.BadParameter("name a job (importance, links, archival, consolidation or all), or give --history or --undo.")
    from memdir.evolution import JOBS
    from memdir.evolution.runner import run_job

    names = list(JOBS) if job is JobName.all else [job.value]
    records = []
    # No job needs the model here: the stored vectors are compared, and by hand consolidation only
    # supersedes (merging, which writes new content, is the client's model's decision, in the server).
    with Memory.open(load_settings(root, agent, **identity(role, admin, shared)), load_model=False) as memory:
        for name in names:
            record = run_job(memory, JOBS[name], dry_run=dry_run, batch_size=batch_size, timeout=timeout)
            assert record is not None  # a run by hand always runs
            records.append(record)
            if not as_json:
                typer.echo(_run_line(record))
                for line in record.details[:limit]:
                    typer.echo(f"  {line}")
                if len(record.details) > limit:
                    typer.echo(f"  … and {len(record.details) - limit} more (--limit)")
    if as_json:
        typer.echo(json.dumps([{**record.to_json(), "details": record.details} for record in records], indent=2))


@app.command()
@handle_errors
def unarchive(
    path: Annotated[str, typer.Argument(help="The archived entry, e.g. concept/ruby/classes.md.")],
    root: RootOption = None,
    agent: AgentOption = None,
    role: RoleOption = None,
    admin: AdminOption = False,
    shared: SharedOption = False,
) -> None:
    """Bring an archived entry back into search and discovery (its owner's, or an admin's, to do)."""
    from memdir.evolution.archival import unarchive as restore
    from memdir.memory import Memory

    with Memory.open(load_settings(root, agent, **identity(role, admin, shared)), load_model=False) as memory:
        entry = restore(memory, path, now=datetime.now(UTC))
    console().print(f"[green]memory://{entry.path} is back in search and discovery.[/green]")
