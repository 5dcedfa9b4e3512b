"""The `memdir` command: the fast paths of the hooks and of `memdir serve`, then the full command line.

Claude Code runs `memdir discover` on every prompt and `memdir hook session-start` on
every session start, each as a fresh process. When a memdir server for the same store is
running, the answer is one round trip over its local socket (`memdir.core.hook_socket`);
importing the full CLI (typer, pydantic: ~300 ms) would then be most of the
hook's time. So this entry point reads the few settings the fast path needs with
`memdir.core.locations` (no pydantic), asks the server, and prints its answer. Anything
it is not sure about — other options, an odd payload, a setting it cannot read plainly, no
server, a slow one — goes to the full CLI (`memdir.cli`), which behaves as before.
A discover hook no server answers is worked out here, without it too, and `memdir serve`
as an MCP client runs it skips the command line as well (`served_plainly`).
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memdir.core import hook_socket
from memdir.core.locations import AGENT_NAME, HOOK_SOCKET_TIMEOUT, default_root, is_unset, quick_setting

if TYPE_CHECKING:
    from memdir.core.settings import Settings

HOOKS = {("discover",): ("discover", "UserPromptSubmit"), ("hook", "session-start"): ("session-start", "SessionStart")}
OPTIONS = {"discover": ("--root", "--agent", "--mode"), "session-start": ("--root", "--agent")}
SERVE_OPTIONS = ("--root", "--agent", "--mode")
MODES = ("assistant", "retrieval", "researcher")
TRUE, FALSE = ("1", "on", "t", "true", "y", "yes"), ("0", "off", "f", "false", "n", "no")


def main() -> None:
    """Run ``memdir`` with ``sys.argv``; Ctrl-C while it is still starting ends it quietly (status 130).

    Importing the command line and building its commands takes a few hundred milliseconds; a
    KeyboardInterrupt raised in there would print a traceback of import machinery. Once a
    command runs, click turns Ctrl-C into "Aborted!", and `memdir serve` handles it itself
    (`memdir.server.stopping`).
    """
    try:
        if sys.argv[1:2] == ["discover"]:
            # A discover hook no server answers opens the store for one search and ends: the
            # cyclic collector's passes over its index and listings while they are built (~40 ms
            # of CPU at 10K entries) would find nothing to free.
            gc.disable()
        try:
            answered = answered_by_server(sys.argv[1:])
        except Exception:  # the fast path must never cost the hook its answer: the CLI does it the long way
            answered = False
        if answered:
            _end_now()
        gc.enable()
        if not served_plainly(sys.argv[1:]):
            from memdir.cli import app

            app()
    except KeyboardInterrupt:
        raise SystemExit(130) from None


def _end_now() -> None:
    """End the process once a hook's answer is out, skipping the interpreter's teardown.

    Everything the hook opened is closed by then (the store, the model's thread) and only
    stdout holds what is left to write. The teardown would free, one by one, every object of
    the store a cold hook opened and the model's session (tens of milliseconds at 10K entries),
    memory that the exit returns anyway.
    """
    with contextlib.suppress(OSError):  # (a reader gone already: the hook still never fails the prompt)
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)


def answered_by_server(argv: list[str]) -> bool:
    """True when ``argv`` is a hook that a running server answered, or a discover hook that no
    server answered and this process did, without the CLI (the output is printed either way)."""
    hook = next(((words, hook) for words, hook in HOOKS.items() if tuple(argv[: len(words)]) == words), None)
    if hook is None:
        return False
    words, (kind, event) = hook
    options = _options(argv[len(words):], OPTIONS[kind])
    if options is None:
        return False
    raw = sys.stdin.read()
    sys.stdin = io.StringIO(raw)  # the full CLI reads the payload again if the server does not answer
    try:
        payload = json.loads(raw)
    except ValueError:
        return False
    fields = _fields(kind, payload)
    found = _settings(options)
    if fields is None or found is None:
        return False
    store_root, mode, timeout = found
    if kind == "discover":
        fields["include_skills"] = mode != "retrieval"
    text = hook_socket.ask(store_root, {"kind": kind, **fields}, timeout)
    if text is None and kind == "discover":  # no server: the hook does the work itself, still without the CLI
        # One search: the thread pool OpenBLAS starts when numpy is imported costs this process
        # more (~20-40 ms of CPU) than it gains on one query's scan of the vectors.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        settings = _validated(options)
        if settings is None:
            return False
        from memdir.tools.discovery import discover_in_store

        text = discover_in_store(settings, fields["prompt"])
    if text is None:
        return False
    sys.stdout.write(hook_socket.hook_output(event, text))
    return True


def served_plainly(argv: list[str]) -> bool:
    """Run `memdir serve` as an MCP client starts it — stdio, at most ``--root``, ``--agent`` and
    ``--mode`` — without the command line (typer and every command's module), whose import the
    client would wait for before its first ``tools/list``. False, having done nothing, for
    anything else: a terminal on stdin, another option, settings that do not validate; the full
    CLI then serves, or says what is wrong, as before.
    """
    if argv[:1] != ["serve"] or sys.stdin is None or sys.stdin.isatty():
        return False
    options = _options(argv[1:], SERVE_OPTIONS)
    if options is None:
        return False
    # What is imported and built from here on (pydantic, the MCP SDK, the tools) lives as long as
    # the process: the cyclic collector's passes over it, while it grows, would find nothing to
    # free. `serve` turns the collector back on once the server is built.
    gc.disable()
    settings = _validated(options)
    if settings is None:
        gc.enable()
        return False
    from memdir.server.app import serve

    serve(settings)
    return True


def _validated(options: dict[str, str]) -> Settings | None:
    """The settings with ``options`` (``--root`` ...) on top; None when they do not validate (the CLI says why)."""
    from pydantic import ValidationError

    from memdir.core.errors import MemdirError
    from memdir.core.settings import Settings

    values: dict[str, Any] = {name.removeprefix("--"): value for name, value in options.items()}
    try:
        return Settings(**values)
    except (ValidationError, MemdirError):
        return None


def _options(args: list[str], allowed: tuple[str, ...]) -> dict[str, str] | None:
    """``--name value`` / ``--name=value`` pairs of ``allowed`` names; None for anything else (the CLI parses it)."""
    found: dict[str, str] = {}
    rest = list(args)
    while rest:
        name, equals, value = rest.pop(0).partition("=")
        if name not in allowed or name in found:
            return None
        if not equals:
            if not rest:
                return None
            value = rest.pop(0)
        found[name] = value
    return found


def _fields(kind: str, payload: Any) -> dict[str, Any] | None:
    """The request's fields from the hook payload; None when the payload is one the CLI should handle."""
    if not isinstance(payload, dict):
        return None
    if kind == "discover":
        prompt = payload.get("prompt")
        return {"prompt": prompt} if isinstance(prompt, str) and prompt.strip() else None
    cwd = payload.get("cwd")
    return {"cwd": cwd} if cwd is None or isinstance(cwd, str) else None


def _settings(options: dict[str, str]) -> tuple[Path, str, float] | None:
    """(store root, mode, socket timeout) as `Settings` would resolve them; None when unsure or the socket is off."""
    root = quick_setting("root", options.get("--root"))
    agent = quick_setting("agent", options.get("--agent"))
    mode = quick_setting("mode", options.get("--mode"), "assistant")
    timeout = quick_setting("hook_socket_timeout", None, HOOK_SOCKET_TIMEOUT)
    enabled = quick_setting("hook_socket", None, True)
    if any(is_unset(value) for value in (root, agent, mode, timeout, enabled)):
        return None
    if isinstance(enabled, str):
        enabled = True if enabled.lower() in TRUE else False if enabled.lower() in FALSE else None
    if enabled is not True or mode not in MODES or root == "" or not isinstance(root, str | None):
        return None
    if agent is not None and not (isinstance(agent, str) and AGENT_NAME.fullmatch(agent)):
        return None
    try:
        seconds = float(timeout)
    except (TypeError, ValueError):
        return None
    store_root = (Path(root) if root else default_root()).expanduser()
    return (store_root / "agents" / agent if agent else store_root), mode, seconds
