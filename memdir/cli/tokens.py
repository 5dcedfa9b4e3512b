"""`memdir token create|list|revoke`: the bearer tokens `memdir serve --http` accepts.

A typer sub-app registered by `memdir.cli` under the name ``token``. The tokens live
hashed in the token file (`memdir.server.tokens`); a running server sees every change
with its next request.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated

import typer

from memdir.cli.common import JsonOption, app, console, handle_errors, load_settings

if TYPE_CHECKING:
    from memdir.server.tokens import TokenFile

token_app = typer.Typer(help="Bearer tokens for `memdir serve --http` (named, stored hashed).", no_args_is_help=True,
                        rich_markup_mode=None)
NameArgument = Annotated[str, typer.Argument(help="The token's name (e.g. the machine or person it is for).")]


def _tokens() -> TokenFile:
    from memdir.server.tokens import TokenFile

    settings = load_settings()
    return TokenFile(settings.server.http_tokens_file, settings.server.http_token)


@token_app.command("create")
@handle_errors
def create(
    name: NameArgument,
    role: Annotated[str | None, typer.Option(help="The role its client acts in (orchestrator, optimizer, reviewer, executor); default: the server's.")] = None,
    agent: Annotated[str | None, typer.Option(help="The agent its client acts as (owner of what it writes); default: the token's name with --role, else the server's own agent.")] = None,
) -> None:
    """Make a new token and print it (once: only its hash is kept)."""
    tokens = _tokens()
    token = tokens.create(name, role, agent)
    stored = next(stored for stored in tokens.tokens() if stored.name == name)
    if stored.agent is None:
        server = load_settings().roles.agent
        owner = ("the server's own agent, as what you write over stdio and the CLI" if server is None else
                 f"the agent the server runs as (with these settings: {server!r})")
    else:
        owner = f"agent {stored.agent!r}, which only it (or an admin) may then change"
    typer.echo(token)
    console(stderr=True).print(f"Token {name!r} created; keep it now, it is not shown again (stored hashed in {tokens.path}). "
                               f"What its client writes is owned by {owner}.", markup=False)


@token_app.command("list")
@handle_errors
def list_tokens(as_json: JsonOption = False) -> None:
    """List the tokens by name and creation time (never the tokens themselves)."""
    from memdir.server.tokens import SETTINGS_TOKEN_NAME

    tokens = _tokens()
    rows = [{"name": stored.name, "created": stored.created, "role": stored.role, "agent": stored.agent}
            for stored in tokens.tokens()]
    if load_settings().server.http_token:
        rows.append({"name": SETTINGS_TOKEN_NAME, "created": "(http_token setting)", "role": None, "agent": None})
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        typer.echo(f"No tokens (file: {tokens.path}). `memdir token create NAME` makes one.")
        return
    for row in rows:
        typer.echo(f"{row['name']}\t{row['created']}\t{row['agent'] or '(the server’s agent)'}\t{row['role'] or '(the server’s role)'}")


@token_app.command("revoke")
@handle_errors
def revoke(name: NameArgument) -> None:
    """Delete a token; a running server refuses it from its next request on."""
    _tokens().revoke(name)
    typer.echo(f"Token {name!r} revoked.")


app.add_typer(token_app, name="token")
