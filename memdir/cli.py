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
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from pydantic import ValidationError

from memdir.core.entry import ENTRY_TYPES, check_entry_types
from memdir.core.errors import InputValidationError, MemdirError, RootNotFoundError
from memdir.core.files import disk_errors
from memdir.core.identity import parse_role
from memdir.core.settings import Settings
from memdir.core.units import plural

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

app = typer.Typer(
    name="memdir",
    help="Persistent memory for LLM agents: a directory of markdown entries with local semantic search, served over MCP.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,  # plain click help: typer's rich panels show every flag as "--json <bool>"
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(wanted: bool) -> None:
    if wanted:
        from importlib.metadata import version

        typer.echo(f"memdir {version('memdir')}")
        raise typer.Exit()


@app.callback()
def _options(
    _version: Annotated[bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print memdir's version and exit.")] = False,
) -> None:
    """Persistent memory for LLM agents: a directory of markdown entries with local semantic search, served over MCP."""


UNWRAPPED_WIDTH = 10_000
"""Console width when the output is not a terminal: lines are never wrapped, so a path stays whole
for grep, cut and copying (rich would otherwise fold everything at 80 columns)."""


@functools.cache
def console(stderr: bool = False) -> Console:
    """rich's console, made on first use: `memdir serve` and the hooks never import rich."""
    from rich.console import Console

    terminal = Console(stderr=stderr)
    if terminal.is_terminal:
        return terminal
    return Console(stderr=stderr, width=UNWRAPPED_WIDTH, soft_wrap=True)


ROOT_HELP = "Memory root directory (default: MEMDIR_ROOT or the per-user data dir)."
RootOption = Annotated[Optional[Path], typer.Option("--root", file_okay=False, help=ROOT_HELP)]
# The server starts whatever its root is, so that every tool can tell the model what is wrong with it.
ServeRootOption = Annotated[Optional[Path], typer.Option("--root", help=ROOT_HELP)]
AgentOption = Annotated[Optional[str], typer.Option("--agent", help="Use this agent's own store under the root.")]
StoreOption = Annotated[
    Optional[str],
    typer.Option("--store", help="Keep the entries in this PostgreSQL database (postgresql://user@host/db) instead of the root's files (default: MEMDIR_STORE)."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
RoleOption = Annotated[Optional[str], typer.Option("--role", help="The agent's role: orchestrator, optimizer, reviewer or executor (a team shares the root).")]
AdminOption = Annotated[bool, typer.Option("--admin", help="Act as an admin: change and delete any agent's entries.")]
SharedOption = Annotated[bool, typer.Option("--shared", help="An agent without a role works in the shared root, not its own store.")]


DirArgument = Annotated[Optional[Path], typer.Argument(file_okay=False, metavar="DIR", help="Memory root, the same as --root (default: the configured root).", show_default=False)]


def root_of(directory: Path | None, root: Path | None) -> Path | None:
    """The root a command was given, as its DIR argument (the older form, kept) or as --root."""
    if directory is not None and root is not None and directory != root:
        raise typer.BadParameter(f"DIR ({directory}) and --root ({root}) name different roots; give one of them.")
    return root if root is not None else directory


def entry_types(values: list[str] | None) -> list[str] | None:
    """Check --type values (also for --json, which does not go through the MemorySearch tool)."""
    try:
        check_entry_types(values)
    except InputValidationError as exc:
        raise typer.BadParameter(exc.message) from exc
    return values


def non_empty(text: str) -> str:
    """Check a query: an empty one would find nothing, silently."""
    if not text.strip():
        raise typer.BadParameter("the query is empty; say what to look for.")
    return text


def load_settings(root: Path | None = None, agent: str | None = None, **overrides: Any) -> Settings:
    """Settings from file + environment, with the command line's options on top."""
    values = {key: value for key, value in {"root": root, "agent": agent, **overrides}.items() if value is not None}
    return Settings(**values)


def identity(role: str | None, admin: bool, shared: bool = False) -> dict[str, Any]:
    """The settings ``--role``, ``--admin`` and ``--shared`` give (a flag left off changes nothing)."""
    try:
        parsed = parse_role(role)
    except InputValidationError as exc:
        raise typer.BadParameter(exc.message, param_hint="--role") from exc
    return {"role": parsed.value if parsed else None, "admin": True if admin else None, "shared_store": True if shared else None}


def handle_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Turn memdir's errors into a clear message and exit code 1 instead of a traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            # A full or read-only disk under a command's own files (a defrag journal, episodes)
            # says so like the store's own writes do, not with a raw OSError.
            with disk_errors(kwargs.get("root") or kwargs.get("directory") or "of this command"):
                return command(*args, **kwargs)
        except MemdirError as exc:
            console(stderr=True).print(f"[red]Error:[/red] {exc.message}")
            if exc.cli_hint:
                console(stderr=True).print(f"[dim]{exc.cli_hint}[/dim]")
            raise typer.Exit(1) from exc
        except ValidationError as exc:  # a bad setting from the command line, environment or memdir.toml
            for problem in exc.errors():
                where = ".".join(str(part) for part in problem["loc"])
                console(stderr=True).print(f"[red]Error:[/red] setting {where}: {problem['msg']}")
            raise typer.Exit(1) from exc

    return wrapper


def progress_bar() -> Progress:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(), console=console()
    )


@app.command()
@handle_errors
def setup(root: RootOption = None) -> None:
    """Find the embedding model (fetching its files once if needed), check it works, say where it is."""
    from memdir.embeddings.resolve import load_embedder, resolve_model

    settings = load_settings(root)
    with console().status("Looking for the model (fetching it the first time takes a minute)..."):
        resolved = resolve_model(settings.model_dir, settings.model_wanted, download=settings.model_download,
                                 cache_dir=settings.cache_dir, fetch=True)
    console().print(f"Model: [bold]{resolved.model_id}[/bold]")
    console().print(f"From: {resolved.source}")
    with console().status("Loading the model with onnxruntime..."):
        embedder = load_embedder(
            model_dir=settings.model_dir, cache_dir=settings.cache_dir, batch_size=settings.embed_batch_size,
            threads=settings.embed_threads, model_id=settings.model_wanted,
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
    prefetch = data.pop("prefetch")
    for key, value in data.items():
        table.add_row(key.replace("_", " "), "" if value is None else str(value))
    table.add_row("prefetch hit rate", prefetch_line(report.prefetch))
    console().print(table)
    if report.model_state != "ready":  # the reason is in the table (and a failed load logged it): not again
        console().print("[yellow]Search is keyword-only (see reason).[/yellow]")
    else:
        console().print("[green]Semantic search is available.[/green]")
        if report.stale:
            console().print(f"{report.stale} entries need embedding: run `memdir rebuild --missing-only`.")


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
    print(resolve_model(settings.model_dir, settings.model_wanted, cache_dir=settings.cache_dir).directory)


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
    if not settings.store and not settings.store_root.is_dir():  # a mistyped DIR would become an empty root
        raise RootNotFoundError(settings.store_root)
    with Memory.open(settings) as memory, progress_bar() as bar:
        task = bar.add_task("Embedding", total=None)
        count = memory.rebuild(progress=lambda done, total: bar.update(task, completed=done, total=total), everything=not missing_only)
    if memory.model.state.value != "ready":  # a missing model was logged with its reason when it failed to load
        why = f" ({memory.model.reason})" if memory.model.state.value == "disabled" else ""
        console().print(f"[yellow]Index rebuilt; no model available{why}, so nothing was embedded.[/yellow]")
    else:
        console().print(f"[green]Rebuilt: {plural(count, 'entry')} embedded.[/green]")


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
    as_json: JsonOption = False,
) -> None:
    """Hybrid search: the MemorySearch tool's results (with --json: every score as data)."""
    from memdir.memory import Memory
    from memdir.tools.memory_search import memory_search

    with Memory.open(load_settings(root, agent, store=store), read_only=True) as memory:  # looking changes nothing
        if as_json:
            results = memory.search(query, top_k=top_k, threshold=threshold, types=type_, path_prefix=prefix, tags=tag,
                                    include_archived=include_archived)
            typer.echo(json.dumps([dataclasses.asdict(result) for result in results], indent=2, ensure_ascii=False))
            return
        typer.echo(memory_search(memory, query, top_k=top_k, type=type_, path_prefix=prefix, tags=tag,
                                 threshold=threshold, explain=explain, include_archived=include_archived))


StoreArgument = Annotated[str, typer.Argument(metavar="DIR_OR_URL", help="A directory, or a postgresql:// URL.")]


def _other_store(settings: Settings, where: str) -> Settings:
    """The settings of the store ``where`` names (a directory or a PostgreSQL URL), otherwise as ``settings``."""
    from memdir.storage.stores import is_postgres

    if is_postgres(where):
        return settings.model_copy(update={"store": where})
    return settings.model_copy(update={"store": "", "root": Path(where), "agent": None})


def _copy_store(source: Settings, target: Settings) -> None:
    """Copy every entry of ``source`` into the empty store ``target`` (vectors kept, no model loaded)."""
    from memdir.memory import Memory
    from memdir.storage.transfer import copy_entries

    with Memory.open(source, load_model=False, read_only=True) as origin, Memory.open(target, load_model=False) as copy:
        with progress_bar() as bar:
            task = bar.add_task("Copying", total=None)
            report = copy_entries(origin.adapter, copy.adapter, progress=lambda done, total: bar.update(task, completed=done, total=total))
        copy.reconcile()  # the target's search data, from what was copied
    console().print(f"[green]Copied {plural(report.entries, 'entry')}, {plural(report.stubs, 'stub')} and "
                    f"{plural(report.audit_records, 'audit record')}.[/green]")


@app.command("export")
@handle_errors
def export_store(
    target: StoreArgument,
    root: RootOption = None,
    agent: AgentOption = None,
    store: StoreOption = None,
) -> None:
    """Copy the whole store (the root's files, or --store's database) into an empty directory or database."""
    settings = load_settings(root, agent, store=store)
    _copy_store(settings, _other_store(settings, target))


@app.command("import")
@handle_errors
def import_store(
    source: StoreArgument,
    root: RootOption = None,
    agent: AgentOption = None,
    store: StoreOption = None,
) -> None:
    """Copy a whole store (a directory or a database) into this one, which must be empty."""
    settings = load_settings(root, agent, store=store)
    _copy_store(_other_store(settings, source), settings)


# Commands added by the server, defrag and episodes modules are registered below.


# --------------------------------------------------------------------------- server (issue 3)
class ServeMode(str, Enum):
    assistant = "assistant"
    retrieval = "retrieval"
    researcher = "researcher"


ModeOption = Annotated[
    Optional[ServeMode],
    typer.Option("--mode", help="Which memory tools to offer: assistant (default), retrieval (read-only) or researcher (all)."),
]


@app.command()
@handle_errors
def serve(
    root: ServeRootOption = None,
    mode: ModeOption = None,
    agent: AgentOption = None,
    store: StoreOption = None,
    workspace: Annotated[Optional[Path], typer.Option("--workspace", exists=True, file_okay=False, help="Directory the skills' workspace tools (Read, Write, Edit, Glob, Grep, Bash) act on (default: the current directory).")] = None,
    allow_bash: Annotated[bool, typer.Option("--allow-bash", help="Let skills run the shell commands their allowed_commands permit (off by default).")] = False,
    http: Annotated[bool, typer.Option("--http", help="Serve MCP over streamable HTTP (at /mcp) and the web view (at /) for many clients, instead of stdio.")] = False,
    host: Annotated[Optional[str], typer.Option("--host", help="With --http: the address to listen on (default: http_host, 127.0.0.1).")] = None,
    port: Annotated[Optional[int], typer.Option("--port", min=0, max=65535, help="With --http: the port (default: http_port, 8765; 0 = any free one).")] = None,
    connect: Annotated[Optional[str], typer.Option("--connect", metavar="URL", help="Forward this stdio session to a running `memdir serve --http` (e.g. http://127.0.0.1:8765/mcp).")] = None,
    token: Annotated[Optional[str], typer.Option("--token", help="With --connect: the bearer token (default: http_token, MEMDIR_HTTP_TOKEN).")] = None,
    role: RoleOption = None,
    admin: AdminOption = False,
    shared: SharedOption = False,
) -> None:
    """Run the MCP server over stdio (for Claude Desktop, Claude Code and other MCP clients), or over HTTP (--http)."""
    import sys

    from memdir.server.app import serve as run_server

    if http and connect:
        raise typer.BadParameter("--http serves, --connect forwards to a server: give one of them.")
    if (host is not None or port is not None) and not http:
        raise typer.BadParameter("--host and --port go with --http.")
    if token is not None and not connect:
        raise typer.BadParameter("--token goes with --connect (a server reads its tokens from `memdir token`).")
    settings = load_settings(root, agent, store=store, mode=mode.value if mode else None, workspace=workspace,
                             allow_bash=True if allow_bash else None, **identity(role, admin, shared))
    if connect:
        from memdir.server.connect import forward_stdio

        forward_stdio(connect, token or settings.http_token)
        return
    if http:
        from memdir.server.http import serve_http

        serve_http(settings, host=host, port=port)
        return
    if sys.stdin.isatty():  # started by hand: say why nothing happens, and how to stop
        print(
            "memdir serve: waiting for an MCP client on stdin (an MCP client starts this command itself; "
            "`claude mcp add memdir -- memdir serve` sets one up; docs/clients.md says more). Ctrl-C stops it.",
            file=sys.stderr,
        )
    run_server(settings)


@app.command("discover")
def discover_hook(
    root: RootOption = None,
    agent: AgentOption = None,
    mode: ModeOption = None,
) -> None:
    """Claude Code UserPromptSubmit hook: read the hook's JSON on stdin, print the relevant skills and memories.

    Prints the hook output that adds the reminders as context, or nothing when nothing
    is relevant. Never fails the user's prompt: errors go to stderr and the exit code is 0.
    """
    import sys

    try:
        raw = sys.stdin.read()
        try:
            payload = json.loads(raw) if raw.strip() else {}
        except json.JSONDecodeError as exc:
            print(
                f"memdir discover: stdin is not JSON ({exc}); it expects Claude Code's UserPromptSubmit "
                'hook payload, e.g. {"prompt": "..."}. Nothing was added to the prompt.',
                file=sys.stderr,
            )
            return
        prompt = payload.get("prompt") if isinstance(payload, dict) else None
        if not isinstance(prompt, str) or not prompt.strip():
            return
        from memdir.core import hook_socket

        settings = load_settings(root, agent, mode=mode.value if mode else None)
        include_skills = settings.mode != "retrieval"

        def cold() -> str:
            from memdir.memory import Memory
            from memdir.tools.discovery import discover

            with Memory.open(settings, read_only=True) as memory:  # looking changes nothing
                return discover(memory, prompt, settings, include_skills=include_skills)

        # A running server has the store open and the model loaded.
        request = {"kind": "discover", "prompt": prompt, "include_skills": include_skills}
        sys.stdout.write(hook_socket.hook_output("UserPromptSubmit", hook_socket.answer(settings, request, cold)))
    except Exception as exc:  # a hook must never block the user's prompt
        print(f"memdir discover: {type(exc).__name__}: {exc}", file=sys.stderr)


# --------------------------------------------------------------------------- defrag (issue 4)


@app.command()
@handle_errors
def defrag(
    directory: DirArgument = None,
    root: RootOption = None,
    action: Annotated[str, typer.Option("--action", "-a", help="analyze, find_duplicates, find_low_quality, find_archival_candidates, find_related, link_related, merge_duplicates, cleanup_stubs, compact or full.")] = "analyze",
    dry_run: Annotated[bool, typer.Option("--dry-run/--live", help="Preview (default) or really change memory.")] = True,
    threshold: Annotated[Optional[float], typer.Option("--threshold", help="Duplicate similarity threshold (default 0.85).")] = None,
    strategy: Annotated[Optional[str], typer.Option("--strategy", help="Merge strategy: keep_newer, keep_larger or combine.")] = None,
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
            report = Defragmenter(memory).run(action, **options)
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
    from memdir.access.audit import audit_records, headline, parse_since
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


# ----------------------------------------------------------------- episodes (memdir.episodes)
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
import memdir.cli_threads  # noqa: E402,F401 - registers `memdir thread …` (a sub-app module of its own)
import memdir.cli_graph  # noqa: E402,F401 - registers `memdir graph`, `memdir link`, `memdir unlink`
import memdir.cli_evolve  # noqa: E402,F401 - registers `memdir evolve` and `memdir unarchive`
import memdir.cli_tokens  # noqa: E402,F401 - registers `memdir token …`
import memdir.cli_entries  # noqa: E402,F401 - registers `memdir add`, `read`, `list`, `delete`
