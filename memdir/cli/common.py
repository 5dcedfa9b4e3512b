"""Shared by every `memdir` command: the Typer app, the console, common options and error handling."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from pydantic import ValidationError

from memdir.core.entry import check_entry_types
from memdir.core.errors import InputValidationError, MemdirError
from memdir.core.files import disk_errors
from memdir.core.identity import parse_role
from memdir.core.settings import Settings

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
