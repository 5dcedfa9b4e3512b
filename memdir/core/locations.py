"""Where memdir's configuration and default root are, and the few settings a hook needs, without pydantic.

`memdir.core.settings.Settings` is the one place settings are declared; building it imports
pydantic and the settings sections (~150 ms), more than the whole budget of the per-prompt hook's
fast path (`memdir.launch`). This module holds what both share — the config files' locations
and which settings each may hold, the default root, the defaults of the hook-socket settings — and `quick_setting`, which reads
one plain setting with `Settings`' precedence (command line, ``MEMDIR_*`` environment,
``./memdir.toml``, the user's config file, default). Whenever a value is not plainly readable (an unreadable TOML
file, an ambiguous environment), it returns None and the caller takes the full path through
`Settings`, which then reports the problem properly.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

APP_NAME = "memdir"
AGENT_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}")
"""What an agent name may be: it becomes a folder under the root."""
HOOK_SOCKET_TIMEOUT = 0.8
"""Default of ``Settings.hook_socket_timeout``: seconds a hook waits for a running server's answer."""

_UNSET: Any = object()


CONFIG_NAME = "memdir.toml"
"""The name of a config file (the user's, and the working directory's)."""

PRIVILEGED = frozenset({
    "admin", "allow_bash", "workspace", "agent", "role",
    "http_token", "http_tokens_file", "http_host", "http_allowed_hosts", "http_allowed_origins",
})
"""Settings that widen what a client may do or who it acts as. A file an agent can write must not
hold them (a skill with the Write tool could otherwise make the next server admin, turn on Bash,
move the workspace or slip in a token): they come from the command line, the environment of
whoever starts memdir, or the user's own config file (`config_file`), kept owner-only and outside
every workspace and memory root. The working directory's ``memdir.toml`` may set everything else."""


def config_file() -> Path:
    """The user's own config file, which may hold every setting (``MEMDIR_CONFIG``, else the one in
    the user config dir); it need not exist."""
    explicit = os.environ.get("MEMDIR_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME)) / CONFIG_NAME


def project_config_file() -> Path | None:
    """``./memdir.toml``, read over `config_file` for all but the `PRIVILEGED` settings; None when
    ``MEMDIR_CONFIG`` names the one file to read, or there is no such file."""
    if os.environ.get("MEMDIR_CONFIG"):
        return None
    local = Path.cwd() / CONFIG_NAME
    if not local.is_file() or local.resolve() == config_file().resolve():
        return None
    return local


def default_root() -> Path:
    """The root when none is configured: the per-user data directory."""
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME))


def _read_toml(path: Path | None) -> dict[str, Any] | None:
    """A config file's values ({} when there is none; None when it cannot be read plainly)."""
    if path is None or not path.is_file():
        return {}
    import tomllib

    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return None


def _toml(name: str) -> dict[str, Any] | None:
    """The config files' values as `Settings` takes them for setting ``name`` (None: not plainly readable)."""
    user = _read_toml(config_file())
    project = {} if name in PRIVILEGED else _read_toml(project_config_file())
    if user is None or project is None:
        return None
    return {**user, **project}


def quick_setting(name: str, given: Any = None, default: Any = None) -> Any:
    """Setting ``name`` as `Settings` would read it: ``given`` (the command line), ``MEMDIR_<NAME>``, the TOML file, ``default``.

    Returns ``_UNSET`` (see `is_unset`) when the value cannot be read without `Settings`:
    the environment holds the name in two spellings, or the config file is unreadable.
    Values are returned raw (strings from the environment); the caller converts them.
    """
    if given is not None:
        return given
    wanted = f"memdir_{name}"
    found = [value for key, value in os.environ.items() if key.lower() == wanted]
    if len(found) > 1:
        return _UNSET
    if found:
        return found[0]
    table = _toml(name)
    if table is None:
        return _UNSET
    return table.get(name, default)


def is_unset(value: Any) -> bool:
    """True when `quick_setting` could not read the value (take the full path through `Settings`)."""
    return value is _UNSET


__all__ = [
    "AGENT_NAME", "APP_NAME", "CONFIG_NAME", "HOOK_SOCKET_TIMEOUT", "PRIVILEGED",
    "config_file", "default_root", "is_unset", "project_config_file", "quick_setting",
]
