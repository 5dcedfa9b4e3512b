"""Where memdir's configuration and default root are, and the few settings a hook needs, without pydantic.

`memdir.core.settings.Settings` is the one place settings are declared; building it imports
pydantic-settings (~200 ms), which is more than the whole budget of the per-prompt hook's
fast path (`memdir.launch`). This module holds what both share — the config file's location,
the default root, the defaults of the hook-socket settings — and `quick_setting`, which reads
one plain setting with `Settings`' precedence (command line, ``MEMDIR_*`` environment,
``memdir.toml``, default). Whenever a value is not plainly readable (an unreadable TOML
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


def config_file() -> Path:
    """The TOML file settings are read from (it need not exist)."""
    explicit = os.environ.get("MEMDIR_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    local = Path.cwd() / "memdir.toml"
    if local.is_file():
        return local
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME)) / "memdir.toml"


def default_root() -> Path:
    """The root when none is configured: the per-user data directory."""
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME))


def _toml() -> dict[str, Any] | None:
    """The config file's values ({} when there is none; None when it cannot be read plainly)."""
    path = config_file()
    if not path.is_file():
        return {}
    import tomllib

    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError):
        return None


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
    table = _toml()
    if table is None:
        return _UNSET
    return table.get(name, default)


def is_unset(value: Any) -> bool:
    """True when `quick_setting` could not read the value (take the full path through `Settings`)."""
    return value is _UNSET


__all__ = ["AGENT_NAME", "APP_NAME", "HOOK_SOCKET_TIMEOUT", "config_file", "default_root", "is_unset", "quick_setting"]
