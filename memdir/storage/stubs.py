"""Redirect stubs: what is left at a path after its entry was merged or moved.

A stub is an ``.md`` file whose first line names the new home, as SwarmMemory wrote
them (and whose ``.yml`` sidecar, if it has one, says it is a stub)::

    # merged → concept/ruby/advanced-classes.md

    This entry was merged into concept/ruby/advanced-classes.md

``# moved → …`` works the same way; an ASCII ``->`` is accepted in place of ``→``
because people edit these files by hand. Old links keep working: reading a stub
follows it (`follow`) to the entry it points at.

memdir writes a stub as a lone ``.md``; SwarmMemory's defrag wrote its stubs through its
adapter, so they have a ``.yml`` whose metadata says so (``stub: true``, ``redirect_to:
…``). A file with a ``.yml`` that does not say so is an entry: a note that happens to
begin "# moved to Berlin" stays a note (`marks_stub`). The text functions here judge a
file's first line; the adapter adds the sidecar rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from memdir.core.errors import EntryNotFoundError, InvalidPathError, RedirectError
from memdir.core.paths import normalize_path
from memdir.storage.base import Redirect

KINDS = ("merged", "moved")
ARROW = "→"
_HITS_LINE = re.compile(r"^Reads through this redirect: (\d+)$", re.MULTILINE)
DEFAULT_MAX_HOPS = 5

# Byte prefixes that mark a file as a stub; reading this many bytes is enough to tell.
STUB_PREFIXES = tuple(f"# {kind}".encode() for kind in KINDS)
SNIFF_BYTES = 16

_KIND_LINE = re.compile(r"# (merged|moved)(?!\w|-(?!>))")
_FULL_LINE = re.compile(r"# (merged|moved)\s*(?:→|->)\s*(.*?)\s*")

_FIX_HINT = "Rewrite the stub as '# merged → concept/example.md' (or '# moved → …'), or delete it with MemoryDelete."
_CLI_FIX_HINT = "Rewrite the stub as '# merged → concept/example.md' (or '# moved → …'), or delete it (`memdir delete PATH`)."


def looks_like_stub(head: bytes) -> bool:
    """True if a file starting with ``head`` (its first `SNIFF_BYTES` bytes or more) is a stub.

    Used by listings, which must not parse thousands of files: a file is a stub
    exactly when its first line starts with ``# merged`` or ``# moved`` as a word.
    Such a file without a valid target is a *malformed* stub, which `parse_stub` reports.
    """
    if not head.startswith(STUB_PREFIXES):
        return False
    return _KIND_LINE.match(head[:SNIFF_BYTES].decode("utf-8", errors="ignore")) is not None


def marks_stub(metadata: Any) -> bool:
    """True if an entry's sidecar metadata (a mapping, or a `Metadata` with extra keys) marks a stub."""
    if metadata is None:
        return False
    data = metadata if isinstance(metadata, Mapping) else (getattr(metadata, "model_extra", None) or {})
    return data.get("stub") is True or bool(data.get("redirect_to"))


def format_stub(redirect: Redirect) -> str:
    """The text of a stub file for ``redirect`` (``# merged → target`` plus one sentence).

    Reads through the stub are not written into it (`memdir.storage.directory.stub_reads`): a
    file is never rewritten only to count a read.
    """
    if redirect.kind not in KINDS:
        raise ValueError(f"Unknown redirect kind {redirect.kind!r}; use one of {', '.join(KINDS)}.")
    sentence = "merged into" if redirect.kind == "merged" else "moved to"
    return f"# {redirect.kind} {ARROW} {redirect.target}\n\nThis entry was {sentence} {redirect.target}\n"


def stub_hits(text: str) -> int:
    """The reads an older memdir counted in a stub's last line (0 when it has none, as SwarmMemory's
    stubs and today's): they still count, on top of `memdir.storage.directory.stub_reads`."""
    found = _HITS_LINE.search(text)
    return int(found.group(1)) if found else 0


def parse_stub(text: str, path: str = "") -> Redirect | None:
    """The redirect a stub's text names, or None if ``text`` is not a stub.

    Args:
        text: the file's content (only its first line matters).
        path: the stub's own path, for error messages.

    Raises:
        RedirectError: the first line starts with ``# merged``/``# moved`` but has no
            arrow or no valid target path.
    """
    first_line = text.split("\n", 1)[0].rstrip("\r")
    kind_match = _KIND_LINE.match(first_line)
    if kind_match is None:
        return None
    where = f"memory://{path}" if path else "This stub"
    full = _FULL_LINE.fullmatch(first_line)
    if full is None or not full.group(2):
        raise RedirectError(
            path,
            f"{where} is a malformed redirect stub: its first line {first_line!r} names no target.",
            _FIX_HINT,
            _CLI_FIX_HINT,
        )
    raw_target = full.group(2)
    try:
        target = normalize_path(raw_target)
    except InvalidPathError as exc:
        raise RedirectError(
            path,
            f"{where} is a malformed redirect stub: its target {raw_target!r} is not a valid memory path "
            f"({exc.message})",
            _FIX_HINT,
            _CLI_FIX_HINT,
        ) from exc
    return Redirect(kind=full.group(1), target=target)


def follow(
    read_redirect: Callable[[str], Redirect | None],
    path: str,
    max_hops: int = DEFAULT_MAX_HOPS,
) -> str:
    """The path a chain of stubs starting at ``path`` finally leads to.

    Args:
        read_redirect: returns a path's redirect, None for a real entry, and raises
            `EntryNotFoundError` when nothing exists at the path (the adapter's
            ``read_redirect``).
        path: a normalised logical path.
        max_hops: redirects followed at most (``path`` itself may be a real entry).

    Raises:
        EntryNotFoundError: nothing exists at ``path`` itself.
        RedirectError: the chain is circular, longer than ``max_hops``, ends at a
            missing entry, or passes a malformed stub.
    """
    chain = [path]
    current = path
    via = ""  # how the previous stub names its target, for the missing-target message
    while True:
        try:
            redirect = read_redirect(current)
        except EntryNotFoundError:
            if current == path:
                raise
            raise RedirectError(
                path,
                f"memory://{chain[-2]} was {via} memory://{current}, "
                "which does not exist.",
                f"Delete the stub memory://{chain[-2]} or write it again pointing at an existing entry "
                "(use MemoryGlob to find it).",
                f"Delete the stub (`memdir delete {chain[-2]}`) or write it again pointing at an existing entry "
                "(`memdir list` finds it).",
            ) from None
        if redirect is None:
            return current
        target = redirect.target
        if target in chain:
            cycle = " → ".join(f"memory://{p}" for p in chain[chain.index(target):] + [target])
            raise RedirectError(
                path,
                f"Circular redirect: {cycle}.",
                "Replace one stub in the cycle with real content (MemoryWrite) or delete it (MemoryDelete).",
                "Replace one stub in the cycle with real content (`memdir add PATH`) or delete it (`memdir delete PATH`).",
            )
        if len(chain) > max_hops:
            raise RedirectError(
                path,
                f"memory://{path} redirects more than {max_hops} times "
                f"({' → '.join(f'memory://{p}' for p in chain)} → …).",
                f"Point memory://{path} directly at the final entry, e.g. with MemoryDefrag, "
                "so that readers reach it in fewer hops.",
                f"Point memory://{path} directly at the final entry (rewrite the stub, or `memdir defrag`), "
                "so that readers reach it in fewer hops.",
            )
        chain.append(target)
        current = target
        via = "merged into" if redirect.kind == "merged" else "moved to"

