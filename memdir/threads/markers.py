"""Markers an agent writes into a message to steer its own working memory (gro's stream markers).

* ``@@memory('semantic')@@`` switches the thread's context strategy (``virtual``,
  ``fragment``, ``semantic``; gro's ``hnsw`` means semantic). Quotes are optional.
* ``@@ref('p3')@@`` / ``@@unref('p3')@@`` bring a virtual page back into the context, or let it go.

The message is stored as written, markers included; the switch is a separate operation
in the same event, so it cannot happen without the message or the message without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memdir.core.errors import InputValidationError
from memdir.threads.model import strategy_name

_MARKER = re.compile(r"@@(?P<name>memory|ref|unref)\(\s*['\"]?(?P<arg>[^'\")]*?)['\"]?\s*\)@@", re.IGNORECASE)
_PAGE = re.compile(r"p\d+")


@dataclass(frozen=True)
class Markers:
    """What a message's markers ask for: the last strategy named, pages to reference and to drop."""

    strategy: str | None = None
    refs: tuple[str, ...] = ()
    unrefs: tuple[str, ...] = ()


def parse_markers(text: str) -> Markers:
    """The markers in ``text``; an unknown strategy or page id is an error (and nothing is appended)."""
    strategy = None
    refs: list[str] = []
    unrefs: list[str] = []
    for match in _MARKER.finditer(text):
        name, arg = match.group("name").lower(), match.group("arg").strip()
        if name == "memory":
            strategy = strategy_name(arg)
            continue
        page = arg.lower()
        if not _PAGE.fullmatch(page):
            raise InputValidationError(
                f"{match.group(0)} names no page: page ids look like 'p3'.",
                "The virtual strategy's context lists page ids, e.g. [page p3: …].",
            )
        (refs if name == "ref" else unrefs).append(page)
    return Markers(strategy, tuple(refs), tuple(unrefs))


__all__ = ["Markers", "parse_markers"]
