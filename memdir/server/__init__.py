"""The MCP server: the only part of memdir that imports the MCP SDK.

`build_server(settings)` returns the server; `memdir serve` runs it over stdio.
Nothing here does any work at import time.
"""

from typing import Any

__all__ = ["build_server", "serve"]


def __getattr__(name: str) -> Any:
    # Lazy: `import memdir.server` must not pull in the MCP SDK until a server is built.
    if name in __all__:
        from memdir.server import app

        return getattr(app, name)
    raise AttributeError(name)
