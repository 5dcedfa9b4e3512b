"""`memdir add`, `read`, `list` and `delete`: a person's way to the entries an agent writes.

Registered by `memdir.cli`. Each command goes through `Memory`, so ownership, the audit log,
the word limit and path checks are the same as for an agent's MemoryWrite, MemoryRead,
MemoryGlob and MemoryDelete; the output is plain text made for a terminal and for pipes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from memdir.cli.common import AgentOption, RootOption, StoreOption, app, console, handle_errors, load_settings
from memdir.core.entry import ENTRY_TYPES, Metadata
from memdir.core.paths import has_control_char, normalize_path
from memdir.core.units import plural

PathArgument = Annotated[str, typer.Argument(show_default=False, help="The entry, e.g. fact/ops/staging-reset.md.")]


@app.command()
@handle_errors
def add(
    path: PathArgument,
    file: Annotated[Optional[Path], typer.Argument(metavar="FILE", exists=True, dir_okay=False, show_default=False, help="Read the content from this file (default: standard input).")] = None,
    title: Annotated[Optional[str], typer.Option("--title", help="The entry's title (default: its first heading, else its file name).")] = None,
    tag: Annotated[Optional[list[str]], typer.Option("--tag", help="A search keyword (repeatable).")] = None,
    root: RootOption = None,
    agent: AgentOption = None,
    store: StoreOption = None,
) -> None:
    """Add an entry (or replace it) with markdown from a file or standard input."""
    from memdir.memory import Memory
    from memdir.tools.memory_write import check_content, near_duplicates

    logical = normalize_path(path)
    folder = logical.split("/", 1)[0]
    if folder not in ENTRY_TYPES:
        raise typer.BadParameter(f"{path} is not under one of the four folders; start it with {', '.join(t + '/' for t in ENTRY_TYPES)}.", param_hint="PATH")
    if file is None and sys.stdin.isatty():
        raise typer.BadParameter("give the content as a FILE, or pipe it in: `echo 'text' | memdir add PATH`.", param_hint="FILE")
    content = file.read_text(encoding="utf-8") if file is not None else sys.stdin.read()
    name = (title or _first_heading(content) or Path(logical).stem.replace("-", " ").replace("_", " ")).strip()
    for label, value in [("--title", name), *(("--tag", one) for one in tag or [])]:
        if has_control_char(value):
            raise typer.BadParameter(f"{value!r:.80} holds a line break or control character; write it on one line.", param_hint=label)
    with Memory.open(load_settings(root, agent, store=store)) as memory:
        check_content(content, memory.settings.limits.word_limit)
        result = memory.write(logical, content, title=name, metadata=Metadata(type=folder, tags=tag or [], source="user"))
        duplicates = near_duplicates(memory, result.entry)
    typer.echo(f"{'Replaced' if result.overwritten else 'Added'} {result.entry.path} ({name})")
    for similar, similar_title, score in duplicates:
        typer.echo(f"  similar: {similar} ({similar_title}, {round(score * 100)}%)")


def _first_heading(content: str) -> str | None:
    found = re.search(r"^#{1,6}\s+(.+?)\s*#*\s*$", content, flags=re.MULTILINE)
    return found.group(1) if found else None


@app.command()
@handle_errors
def read(path: PathArgument, root: RootOption = None, agent: AgentOption = None, store: StoreOption = None) -> None:
    """Print an entry's content as it is stored."""
    from memdir.memory import Memory

    with Memory.open(load_settings(root, agent, store=store), read_only=True, load_model=False) as memory:
        entry = memory.read(path)
    if entry.path != normalize_path(path):
        console(stderr=True).print(f"[dim]{normalize_path(path)} now lives at {entry.path}[/dim]")
    typer.echo(entry.content, nl=not entry.content.endswith("\n"))


@app.command("list")
@handle_errors
def list_entries(
    pattern: Annotated[str, typer.Argument(help="A glob over entry paths, e.g. 'fact/**' or '**/*deploy*'.")] = "**",
    long: Annotated[bool, typer.Option("--long", "-l", help="Also show each entry's title, size and last change.")] = False,
    root: RootOption = None,
    agent: AgentOption = None,
    store: StoreOption = None,
) -> None:
    """List the entries whose paths match a glob, newest first."""
    from memdir.memory import Memory

    with Memory.open(load_settings(root, agent, store=store), read_only=True, load_model=False) as memory:
        page = memory.glob_page(pattern, memory.settings.limits.glob_max_results)
    for info in page.entries:
        typer.echo(f"{info.path}\t{info.title}\t{info.size}\t{info.updated_at:%Y-%m-%d %H:%M}" if long else info.path)
    if page.total is None:
        console(stderr=True).print("[dim]… more entries match: narrow the pattern to see them.[/dim]")
    elif page.total > len(page.entries):
        more = plural(page.total - len(page.entries), "more entry", "more entries")
        console(stderr=True).print(f"[dim]… {more}: narrow the pattern to see them.[/dim]")
    elif not page.entries:
        console(stderr=True).print(f"No entries match {pattern!r}.")


@app.command()
@handle_errors
def delete(path: PathArgument, root: RootOption = None, agent: AgentOption = None, store: StoreOption = None) -> None:
    """Delete an entry, and the links other entries hold to it."""
    from memdir.memory import Memory

    with Memory.open(load_settings(root, agent, store=store), load_model=False) as memory:
        deleted, unlinked = memory.delete_and_unlink(path)
    typer.echo(f"Deleted {deleted}")
    for holder in unlinked:
        typer.echo(f"  removed its link from {holder}")
