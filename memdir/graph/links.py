"""Typed links: the model and its ``.yml`` form, for everything above the storage layer.

The model itself is defined in `memdir.core.links` (the derived index, in the storage layer
below, indexes links and may not import upwards); this module is where the rest of memdir
takes it from. Making and removing links goes through `memdir.memory.Memory` (``link``,
``unlink``, ``remove_links_to``, ``record_traversal``), so every path — tools, CLI, defrag,
evolution jobs — gets the same checks.
"""

from __future__ import annotations

from memdir.core.links import (
    LINK_KINDS,
    LINK_ORIGINS,
    RELATED_KIND,
    UNREADABLE_LINKS,
    Link,
    LinkKind,
    LinkOrigin,
    check_link_kind,
    check_origin,
    check_strength,
    entry_links,
    make_link,
    parse_links,
    related_links,
)

__all__ = [
    "LINK_KINDS",
    "LINK_ORIGINS",
    "RELATED_KIND",
    "UNREADABLE_LINKS",
    "Link",
    "LinkKind",
    "LinkOrigin",
    "check_link_kind",
    "check_origin",
    "check_strength",
    "entry_links",
    "make_link",
    "parse_links",
    "related_links",
]
