"""`memdir defrag` and `memdir audit`: looking after a memory and reading its audit log."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated, Optional

import typer

from memdir.cli.common import (
    AdminOption,
    AgentOption,
    DirArgument,
    JsonOption,
    RoleOption,
    RootOption,
    SharedOption,
    StoreOption,
    app,
    console,
    handle_errors,
    identity,
    load_settings,
    root_of,
)


@app.command()
@handle_errors
def defrag(
    directory: DirArgument = None,
    root: RootOption = None,
    action: Annotated[Optional[str], typer.Option("--action", "-a", help="analyze, find_duplicates, find_low_quality, find_archival_candidates, find_related, link_related, merge_duplicates, cleanup_stubs, compact or full (default: the full analysis: health, duplicates, low quality and archival candidates).", show_default=False)] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run/--live", help="Preview (default) or really change memory.")] = True,
    threshold: Annotated[Optional[float], typer.Option("--threshold", help="Duplicate similarity threshold (default 0.85).")] = None,
    strategy: Annotated[Optional[str], typer.Option("--strategy", help="Merge strategy: combine (default, keeps every fact), keep_newer or keep_larger (replace the other's text by a redirect).")] = None,
    min_similarity: Annotated[Optional[float], typer.Option("--min-similarity", help="Related: lowest cosine (default 0.60).")] = None,
    max_similarity: Annotated[Optional[float], typer.Option("--max-similarity", help="Related: cosine from which pairs are duplicates (default 0.85).")] = None,
    age_days: Annotated[Optional[float], typer.Option("--age-days", help="Archival candidates and stubs: minimum age in days.")] = None,
    min_age_days: Annotated[Optional[float], typer.Option("--min-age-days", help="Compact: minimum age in days (default 30).")] = None,
    max_hits: Annotated[Optional[int], typer.Option("--max-hits", help="Most reads an entry or stub may have had.")] = None,
    min_quality: Annotated[Optional[int], typer.Option("--min-quality", help="Quality score below which entries are low quality.")] = None,
    confidence: Annotated[Optional[str], typer.Option("--confidence", help="find_low_quality: only this confidence (high, medium, low, none).")] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", help="Most items listed in the report (default 50).")] = None,
    undo: Annotated[bool, typer.Option("--undo", help="Revert the last live defrag run instead.")] = False,
    force: Annotated[bool, typer.Option("--force", help="With --undo: also overwrite entries changed after that run.")] = False,
    agent: AgentOption = None,
    role: RoleOption = None,
    admin: AdminOption = False,
    shared: SharedOption = False,
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """Analyze and optimize a memory: health, duplicates, links, merges, stubs, compaction (dry run unless --live)."""
    from rich.markdown import Markdown

    from memdir.memory import Memory
    from memdir.optimization.defragmenter import Defragmenter
    from memdir.optimization.journal import undo_last
    from memdir.optimization.reports import FOR_TERMINAL

    with Memory.open(load_settings(root_of(directory, root), agent, store=store, **identity(role, admin, shared))) as memory:
        if undo:
            result = undo_last(memory, force=force)
            data, text = dataclasses.asdict(result), result.to_markdown()
        else:
            options = {
                "similarity_threshold": threshold, "merge_strategy": strategy, "min_similarity": min_similarity,
                "max_similarity": max_similarity, "age_days": age_days, "min_age_days": min_age_days,
                "max_hits": max_hits, "min_quality_score": min_quality, "confidence_filter": confidence,
                "limit": limit, "dry_run": dry_run,
            }
            if action is None:
                report = Defragmenter(memory, wording=FOR_TERMINAL).overview(**({"limit": limit} if limit is not None else {}))
            else:
                report = Defragmenter(memory, wording=FOR_TERMINAL).run(action, **options)
            data, text = report.to_dict(), report.markdown
    if as_json:
        typer.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    elif console().is_terminal:
        console().print(Markdown(text))
    else:  # piped: the markdown itself, not rich's rendering of it at a width no one sees
        typer.echo(text, nl=False)


@app.command()
@handle_errors
def audit(
    path: Annotated[Optional[str], typer.Argument(help="Only the changes of this entry.", show_default=False)] = None,
    root: RootOption = None,
    store: StoreOption = None,
    agent: Annotated[Optional[str], typer.Option("--agent", help="Only the changes this agent made.")] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="Only changes since a date/time (2026-11-01, 2026-11-01T08:00) or an age (30m, 12h, 7d).")] = None,
    diff: Annotated[bool, typer.Option("--diff", help="Show each change's diff.")] = False,
    as_json: JsonOption = False,
) -> None:
    """The audit log: who created, changed, deleted, archived, merged or linked what, and when (oldest first)."""
    from memdir.storage.audit_query import audit_records, headline, parse_since
    from memdir.storage.stores import open_audit

    settings = load_settings(root, store=store)  # the shared root (or the --root given): --agent filters here, never picks a store
    records = audit_records(open_audit(settings), path, agent, parse_since(since) if since else None)
    if as_json:
        typer.echo(json.dumps([dataclasses.asdict(record) for record in records], indent=2, ensure_ascii=False))
        return
    if not records:
        typer.echo("No changes recorded" + (" that match." if path or agent or since else "."))
        return
    for record in records:
        typer.echo(headline(record))
        if diff and record.diff:
            typer.echo("\n".join(f"    {line}" for line in record.diff.splitlines()))
