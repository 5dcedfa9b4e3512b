"""`memdir export` / `memdir import`: copying a whole store between a directory and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from memdir.cli.common import AgentOption, RootOption, StoreOption, app, console, handle_errors, load_settings, progress_bar
from memdir.core.settings import Settings
from memdir.core.units import plural

StoreArgument = Annotated[str, typer.Argument(metavar="DIR_OR_URL", help="A directory, or a postgresql:// URL.")]


def _other_store(settings: Settings, where: str) -> Settings:
    """The settings of the store ``where`` names (a directory or a PostgreSQL URL), otherwise as ``settings``."""
    from memdir.storage.stores import is_postgres

    if is_postgres(where):
        return settings.with_values(store=where)
    return settings.with_values(store="", root=Path(where), agent=None)


def _copy_store(source: Settings, target: Settings) -> None:
    """Copy every entry of ``source`` into the empty store ``target`` (vectors kept, no model loaded)."""
    from memdir.memory import Memory
    from memdir.storage.transfer import copy_entries

    with Memory.open(source, load_model=False, read_only=True) as origin, Memory.open(target, load_model=False) as copy:
        with progress_bar() as bar:
            task = bar.add_task("Copying", total=None)
            report = copy_entries(origin.adapter, copy.adapter, progress=lambda done, total: bar.update(task, completed=done, total=total))
        copy.reconcile()  # the target's search data, from what was copied
    console().print(f"[green]Copied {plural(report.entries, 'entry')}, {plural(report.stubs, 'stub')}, "
                    f"{plural(report.threads, 'thread')} and {plural(report.audit_records, 'audit record')}.[/green]")


@app.command("export")
@handle_errors
def export_store(
    target: StoreArgument,
    root: RootOption = None,
    agent: AgentOption = None,
    store: StoreOption = None,
) -> None:
    """Copy the whole store (the root's files, or --store's database) into an empty directory or database."""
    from memdir.storage.stores import is_postgres
    from memdir.storage.transfer import check_target_folder

    settings = load_settings(root, agent, store=store)
    if not is_postgres(target):
        check_target_folder(Path(target), None if is_postgres(settings.storage.store) else settings.storage.root)
    _copy_store(settings, _other_store(settings, target))


IMPORT_FORMATS = ("mcp-memory (the MCP reference memory server's memory.jsonl), mcp-memory-service (its "
                  "sqlite_vec.db or JSON export), basic-memory (a project folder), claude or chatgpt (a conversation "
                  "export: the zip or its conversations.json)")


@app.command("import")
@handle_errors
def import_store(
    source: Annotated[str, typer.Argument(metavar="SOURCE", help="A memdir store (a directory or a postgresql:// URL), or with --from the file or folder to import.")],
    from_format: Annotated[Optional[str], typer.Option("--from", metavar="FORMAT", help=f"Import from another memory system: {IMPORT_FORMATS}.")] = None,
    root: RootOption = None,
    agent: AgentOption = None,
    store: StoreOption = None,
) -> None:
    """Copy a whole memdir store into this one (which must be empty), or with --from import another memory system's data.

    An import with --from can be run again: what is already imported is left as it is, and
    each record it skips is named with the reason. It is all or nothing: one stopped halfway
    (Ctrl-C) is undone at once, one killed is undone by the next import.
    """
    settings = load_settings(root, agent, store=store)
    if from_format is None:
        _copy_store(_other_store(settings, source), settings)
        return
    from memdir.importers import check_format, import_from
    from memdir.memory import Memory

    check_format(from_format)
    with Memory.open(settings) as memory, progress_bar() as bar:  # each batch embedded as it is written
        task = bar.add_task("Importing", total=None)
        report = import_from(memory, from_format, Path(source),
                             progress=lambda done, total: bar.update(task, completed=done, total=total))
    typer.echo(report.describe())
