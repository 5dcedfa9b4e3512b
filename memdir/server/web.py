"""The read-only web view of `memdir serve --http` (filled in below)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memdir.core.settings import Settings
    from memdir.server.app import MemdirServer


def register(server: MemdirServer, settings: Settings) -> None:
    """Add the web view's routes to ``server``."""
