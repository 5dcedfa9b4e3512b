"""`memdir search`: hybrid search from the command line."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated, Optional

import typer

from memdir.cli.common import AgentOption, JsonOption, RootOption, StoreOption, app, entry_types, handle_errors, load_settings, non_empty
from memdir.core.entry import ENTRY_TYPES


@app.command()
@handle_errors
def search(
    query: Annotated[str, typer.Argument(callback=non_empty, help="What to look for.")],
    root: RootOption = None,
    agent: AgentOption = None,
    store: StoreOption = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, help="Number of results (1-50).")] = 10,
    type_: Annotated[Optional[list[str]], typer.Option("--type", callback=entry_types, help=f"Only these entry types (repeatable): {', '.join(ENTRY_TYPES)}.")] = None,
    prefix: Annotated[Optional[str], typer.Option("--prefix", help="Only entries under this folder.")] = None,
    tag: Annotated[Optional[list[str]], typer.Option("--tag", help="Only entries with this tag (repeatable).")] = None,
    threshold: Annotated[Optional[float], typer.Option("--threshold", min=0.0, max=1.0, help="Only results scoring at least this (0-1).")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show each result's score breakdown.")] = False,
    include_archived: Annotated[bool, typer.Option("--include-archived", help="Also archived and superseded entries.")] = False,
    min_importance: Annotated[Optional[float], typer.Option("--min-importance", min=1.0, max=10.0, help="Only entries at least this important (1-10; an entry stating none counts as 5).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Hybrid search: the MemorySearch tool's results (with --json: every score as data)."""
    from memdir.memory import Memory
    from memdir.tools.memory_search import memory_search

    with Memory.open(load_settings(root, agent, store=store), read_only=True) as memory:  # looking changes nothing
        if as_json:
            results = memory.search(query, top_k=top_k, threshold=threshold, types=type_, path_prefix=prefix, tags=tag,
                                    include_archived=include_archived, min_importance=min_importance)
            typer.echo(json.dumps([dataclasses.asdict(result) for result in results], indent=2, ensure_ascii=False))
            return
        typer.echo(memory_search(memory, query, top_k=top_k, type=type_, path_prefix=prefix, tags=tag,
                                 threshold=threshold, explain=explain, include_archived=include_archived,
                                 min_importance=min_importance))
