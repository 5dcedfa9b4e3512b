"""`memdir graph`, `memdir link`, `memdir unlink`: typed links between entries from the command line.

Registered by `memdir.cli`. Each command calls the same tool function as the MCP server
(MemoryGraph, MemoryLink, MemoryUnlink), so the checks and the answers are the same.
"""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from memdir.cli.common import AgentOption, RootOption, app, handle_errors, load_settings
from memdir.core.links import LINK_KINDS

KindOption = Annotated[Optional[str], typer.Option("--kind", help=f"Link kind: {', '.join(LINK_KINDS)}.")]


@app.command()
@handle_errors
def graph(
    path: Annotated[str, typer.Argument(help="The entry at the centre, e.g. concept/ruby/classes.md.")],
    root: RootOption = None,
    agent: AgentOption = None,
    hops: Annotated[int, typer.Option("--hops", help="How many links away to go (1-3).")] = 1,
    kind: Annotated[Optional[list[str]], typer.Option("--kind", help="Only links of this kind (repeatable).")] = None,
    mermaid: Annotated[bool, typer.Option("--mermaid", help="Also print a Mermaid diagram.")] = False,
) -> None:
    """Show an entry's links and its neighbours (the MemoryGraph tool)."""
    from memdir.memory import Memory
    from memdir.tools.memory_graph import memory_graph
    from memdir.tools.session import Session

    with Memory.open(load_settings(root, agent), read_only=True, load_model=False) as memory:
        typer.echo(memory_graph(memory, Session(), path, hops=hops, kinds=kind, mermaid=mermaid))


@app.command()
@handle_errors
def link(
    source: Annotated[str, typer.Argument(help="The entry the link starts from.")],
    target: Annotated[str, typer.Argument(help="The entry it points to.")],
    root: RootOption = None,
    agent: AgentOption = None,
    kind: Annotated[str, typer.Option("--kind", help=f"Link kind: {', '.join(LINK_KINDS)}.")] = "references",
    strength: Annotated[float, typer.Option("--strength", help="From 0 to 1.")] = 1.0,
) -> None:
    """Link one entry to another (the MemoryLink tool); the same kind again replaces the link."""
    from memdir.memory import Memory
    from memdir.tools.memory_link import memory_link

    with Memory.open(load_settings(root, agent), load_model=False) as memory:
        typer.echo(memory_link(memory, source, target, kind, strength))


@app.command()
@handle_errors
def unlink(
    source: Annotated[str, typer.Argument(help="The entry holding the link.")],
    target: Annotated[str, typer.Argument(help="The entry it points to.")],
    root: RootOption = None,
    agent: AgentOption = None,
    kind: KindOption = None,
) -> None:
    """Remove the links from one entry to another (of one --kind, or all; the MemoryUnlink tool)."""
    from memdir.memory import Memory
    from memdir.tools.memory_link import memory_unlink

    with Memory.open(load_settings(root, agent), load_model=False) as memory:
        typer.echo(memory_unlink(memory, source, target, kind))
