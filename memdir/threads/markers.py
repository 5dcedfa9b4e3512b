"""Markers an agent writes into a message to steer its own working memory (gro's stream markers).

* ``@@memory('semantic')@@`` switches the thread's context strategy (``virtual``,
  ``fragment``, ``semantic``; gro's ``hnsw`` means semantic). Quotes are optional.
* ``@@ref('p3')@@`` / ``@@unref('p3')@@`` bring a virtual page back into the context, or let it go;
  ``@@ref('c41')@@`` does the same for one chunk (a summary brings back the turns it replaced).

The message is stored as written, markers included; the switch is a separate operation
in the same event, so it cannot happen without the message or the message without it.
A marker that names no strategy or page costs nothing: the message is kept, the marker
is ignored, and the reply says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memdir.core.errors import InputValidationError
from memdir.threads.model import strategy_name

_MARKER = re.compile(r"@@(?P<name>memory|ref|unref)\(\s*['\"]?(?P<arg>[^'\")]*?)['\"]?\s*\)@@", re.IGNORECASE)
_REFERENCE = re.compile(r"[pc]\d+")


def check_reference(text: str) -> str:
    """A page id (``p3``) or chunk id (``c41``) as given to ref/unref, lower-cased; else a clear error."""
    name = (text or "").strip().lower()
    if not _REFERENCE.fullmatch(name):
        raise InputValidationError(
            f"{text!r} names no page or chunk: page ids look like 'p3', chunk ids like 'c41'.",
            "The virtual strategy's context lists page ids ([page p3: …]) and chunk ids ([c41 …]).",
        )
    return name


@dataclass(frozen=True)
class Markers:
    """What a message's markers ask for: the last strategy named, pages or chunks to reference and to drop, and the
    markers ignored (each with why)."""

    strategy: str | None = None
    refs: tuple[str, ...] = ()
    unrefs: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()


def parse_markers(text: str) -> Markers:
    """The markers in ``text``; one that names no known strategy, page or chunk is ignored (and listed why)."""
    strategy = None
    refs: list[str] = []
    unrefs: list[str] = []
    ignored: list[str] = []
    for match in _MARKER.finditer(text):
        name, arg = match.group("name").lower(), match.group("arg")
        try:
            if name == "memory":
                strategy = strategy_name(arg)
            else:
                (refs if name == "ref" else unrefs).append(check_reference(arg))
        except InputValidationError as exc:
            ignored.append(f"{match.group(0)}: {exc.message.rstrip('.')}")
    return Markers(strategy, tuple(refs), tuple(unrefs), tuple(ignored))


__all__ = ["Markers", "check_reference", "parse_markers"]
