"""Reading an import's source files, with errors that name the file and say what to give instead."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memdir.core.errors import InputValidationError


def read_text(source: Path) -> str:
    """The text of ``source`` (UTF-8; undecodable bytes replaced)."""
    if source.is_dir():
        raise InputValidationError(f"{source} is a folder; this format is read from one file.",
                                   "Give the file itself (see `memdir import --help`).")
    try:
        return source.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputValidationError(f"Cannot read {source}: {exc.strerror or exc}.", "Check the path.") from exc


def read_json(source: Path) -> Any:
    """The JSON value in ``source``."""
    try:
        return json.loads(read_text(source))
    except json.JSONDecodeError as exc:
        raise InputValidationError(f"{source} is not JSON: {exc.msg} (line {exc.lineno}).",
                                   "Give the export file as the tool wrote it.") from exc


__all__ = ["read_json", "read_text"]
