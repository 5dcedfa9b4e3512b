"""The valid choice closest to a mistyped one, so an error can say what was probably meant."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(value: object, choices: Iterable[str]) -> str:
    """`` Did you mean 'concept'?`` for the choice closest to ``value`` (``concepts``), or ``""``."""
    close = difflib.get_close_matches(str(value), list(choices), n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


__all__ = ["did_you_mean"]
