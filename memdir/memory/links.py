"""The typed links between a memory's entries: making, removing and following them."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from memdir.core.entry import Entry, utcnow
from memdir.core.errors import EntryNotFoundError, InputValidationError, ReadOnlyEntryError
from memdir.core.links import RELATED_KIND, Link, check_link_kind, make_link, related_links
from memdir.core.paths import normalize_path
from memdir.memory.keeper import IndexKeeper
from memdir.memory.metadata import MetadataChanges
from memdir.memory.ownership import Ownership
from memdir.storage.base import EntryIndex, StorageAdapter
from memdir.storage.records import Edge


class Links:
    """Links held in entries' metadata (typed ``links`` and ``related`` paths), read back through the index."""

    def __init__(self, adapter: StorageAdapter, index: EntryIndex, keeper: IndexKeeper, owners: Ownership, metadata: MetadataChanges) -> None:
        self.adapter = adapter
        self.index = index
        self.keeper = keeper
        self.owners = owners
        self.metadata = metadata

    def remove_links_to(self, target: str) -> list[str]:
        """Remove every link to ``target`` (typed ``links`` and ``related`` paths) from the entries'
        metadata; returns the entries changed.

        The derived index's link table names the entries to change (no ``.yml`` is read
        but theirs); each keeps its content, age and read count. Links written into an
        entry's content (frontmatter) are the author's text and stay; ``analyze`` reports them.
        """
        target = normalize_path(target)
        changed = []
        with self.keeper.changing():
            for path in self.index.linking_to(target):
                entry = self.adapter.read_entry(path, follow=False)
                if self.keep_only(entry, lambda link: link.target != target, "unlink", target=target):
                    changed.append(path)
        return changed

    def edges(self, paths: Iterable[str], kinds: Iterable[str] | None = None) -> list[Edge]:
        """Every link from or to one of ``paths`` (of ``kinds``, when given), from the derived index."""
        self.keeper.refresh()
        return self.index.edges(list(paths), list(kinds) if kinds else None)

    def of(self, path: str) -> list[Link]:
        """The links an entry holds (typed ``links``, then ``related`` paths as ``references``)."""
        return self.adapter.read_entry(normalize_path(path), follow=False).metadata.all_links

    def link(
        self, source: str, target: str, kind: str = RELATED_KIND, strength: float = 1.0, *, origin: str = "user"
    ) -> Link:
        """Link ``source`` to ``target`` (both existing entries), replacing a link of the same kind.

        Raises:
            InputValidationError: an unknown kind or origin, a strength outside [0, 1], a link to itself.
            EntryNotFoundError: either entry does not exist.
        """
        wanted = make_link(target, kind, strength, origin)
        logical = normalize_path(source)
        if wanted.target == logical:
            raise InputValidationError(f"{logical} cannot link to itself.", "Name two different entries.")
        with self.keeper.exclusive():
            if not self.adapter.exists(wanted.target):
                raise EntryNotFoundError(wanted.target)
            entry = self.adapter.read_entry(logical, follow=False)
            if entry.virtual:
                raise ReadOnlyEntryError(logical)
            self.owners.guard(logical, entry, "link")
            kept = [link for link in entry.metadata.links if link.key != wanted.key]
            self.metadata.store(entry, entry.metadata.model_copy(update={"links": [*kept, wanted]}),
                                 "link", target=wanted.target, kind=wanted.kind)
        return wanted

    def unlink(self, source: str, target: str, kind: str | None = None) -> list[Link]:
        """Remove the links from ``source`` to ``target`` (of one ``kind``, or all); returns those removed.

        A ``related`` path to ``target`` is a ``references`` link and goes too.

        Raises:
            InputValidationError: an unknown kind, or no such link (the message lists the entry's links).
            EntryNotFoundError: ``source`` does not exist.
        """
        logical, goal = normalize_path(source), normalize_path(target)
        wanted = check_link_kind(kind) if kind is not None else None

        def goes(link: Link) -> bool:
            return link.target == goal and (wanted is None or link.kind == wanted)

        with self.keeper.exclusive():
            entry = self.adapter.read_entry(logical, follow=False)
            removed = [link for link in entry.metadata.all_links if goes(link)]
            if not removed:
                held = ", ".join(f"{link.kind} → {link.target}" for link in entry.metadata.all_links) or "none"
                raise InputValidationError(
                    f"{logical} has no {wanted or ''}{' ' if wanted else ''}link to {goal} (its links: {held}).",
                    "Check the paths and the kind (MemoryGraph shows an entry's links).",
                )
            self.owners.guard(logical, entry, "unlink")
            self.keep_only(entry, lambda link: not goes(link), "unlink", target=goal)
        return removed

    def record_traversal(self, source: str, target: str, when: datetime | None = None) -> int:
        """Note that someone followed the link between ``source`` and ``target`` (either way):
        each such link's ``traversed_at`` becomes ``when`` (now). Returns the links updated.

        A ``related`` path followed becomes a typed ``references`` link carrying the time (the
        path stays in ``related`` for SwarmMemory). Nothing happens on a read-only root.
        """
        if self.keeper.read_only:
            return 0
        ends = normalize_path(source), normalize_path(target)
        moment = when or utcnow()
        updated = 0
        with self.keeper.changing():
            for holder, other in (ends, ends[::-1]):
                try:
                    entry = self.adapter.read_entry(holder, follow=False)
                except EntryNotFoundError:
                    continue
                followed = [link for link in entry.metadata.all_links if link.target == other]
                if not followed or entry.virtual:
                    continue
                touched = {link.key: link.model_copy(update={"traversed_at": moment}) for link in followed}
                links = [touched.pop(link.key, link) for link in entry.metadata.links] + list(touched.values())
                self.metadata.store(entry, entry.metadata.model_copy(update={"links": links}), None)
                updated += len(followed)
        return updated

    def keep_only(self, entry: Entry, keep: Callable[[Link], bool], action: str, **facts: Any) -> bool:
        """Keep only the links (typed and ``related``) that ``keep`` accepts; False if none went.
        ``action`` and ``facts`` are the audit record's (see `store`)."""
        meta = entry.metadata
        links = [link for link in meta.links if keep(link)]
        related = [path for path in meta.related if all(map(keep, related_links([path])))]  # unreadable ones stay
        if len(links) == len(meta.links) and len(related) == len(meta.related):
            return False
        self.metadata.store(entry, meta.model_copy(update={"links": links, "related": related}), action, **facts)
        return True
