"""The changes live defrag runs make, each one checked, locked and journaled.

`Changer` is the only place defrag writes: every change takes the root's exclusive
lock, checks that the entry is still what the analysis saw (its fingerprint), records
its prior state in the `Journal`, changes it, and records the result. An entry that
changed meanwhile is skipped and reported, never overwritten.

The merge helpers (`choose_keeper`, `combine_content`, `combine_metadata`) decide what
a merge keeps. The default, ``combine``, loses no text: the richer entry stays and the
paragraphs only the other holds are appended to it; ``keep_newer`` and ``keep_larger``
replace the other's text by a redirect (the preview quotes what they would drop).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memdir.core.entry import Entry, Metadata
from memdir.core.errors import EntryNotFoundError, MemdirError, NotOwnerError, RedirectError
from memdir.core.links import Link
from memdir.core.paths import link_target
from memdir.core.quality import parse_frontmatter
from memdir.optimization.corpus import Corpus, Item, fingerprint
from memdir.optimization.journal import Journal

if TYPE_CHECKING:
    from memdir.memory import Memory

MERGED_FROM = "<!-- merged from memory://{path} -->"


# --------------------------------------------------------------------------- merge decisions


def choose_keeper(a: Item, b: Item, strategy: str) -> tuple[Item, Item]:
    """(keeper, merged-away) for a duplicate pair.

    ``keep_newer`` keeps the most recently updated entry; ``combine`` and ``keep_larger``
    the richer one (more content), so what ``combine`` appends is the smaller part; ties
    go to the other measure, then to hits, then to the path that sorts first.
    """
    if strategy == "keep_newer":
        key = lambda item: (item.updated_at, item.size, item.hits)  # noqa: E731
    else:
        key = lambda item: (item.size, item.updated_at, item.hits)  # noqa: E731
    if key(a) > key(b) or (key(a) == key(b) and a.path < b.path):
        return a, b
    return b, a


def _said(text: str) -> str:
    """Text as compared for "already holds it": words only, lowercased."""
    return " ".join(re.findall(r"\w+", text.lower()))


def only_in_other(keeper: str, other: str) -> list[str]:
    """The paragraphs of ``other``'s body (its frontmatter dropped) whose words ``keeper`` does not already hold."""
    held = _said(parse_frontmatter(keeper).body)
    paragraphs = re.split(r"\n\s*\n", parse_frontmatter(other).body.strip())
    return [part.strip() for part in paragraphs if part.strip() and _said(part) not in held]


def combine_content(keeper: str, other_path: str, other: str) -> str:
    """The keeper's content followed by the paragraphs only the other holds (nothing when it holds them all)."""
    missing = only_in_other(keeper, other)
    if not missing:
        return keeper
    body = "\n\n".join(missing)
    return f"{keeper.rstrip()}\n\n{MERGED_FROM.format(path=other_path)}\n{body}\n"


def combine_metadata(keeper: Item, other: Item) -> Metadata:
    """The keeper's metadata, plus the other's tags, tools, related and typed links and any fields it lacks.

    Links between the two (or to themselves) are dropped: they would point at one entry.
    """
    data = keeper.stored.to_yaml_dict()
    extra = other.stored.to_yaml_dict()
    for key, value in extra.items():
        if key in ("tags", "tools"):
            data[key] = list(dict.fromkeys([*data.get(key, []), *value]))
        elif key in ("related", "links"):
            continue
        elif key not in data:
            data[key] = value
    related: list[str] = []
    seen = {keeper.path, other.path}
    for link in [*keeper.stored.related, *other.stored.related]:
        target = link_target(link)
        if target is None or target not in seen:
            related.append(link)
            if target:
                seen.add(target)
    data["related"] = related
    between = {keeper.path, other.path}
    typed: dict[tuple[str, str], Link] = {}
    for typed_link in [*keeper.stored.links, *other.stored.links]:
        if typed_link.target not in between:
            typed.setdefault(typed_link.key, typed_link)  # the keeper's link of a (target, kind) wins
    data["links"] = list(typed.values())
    return Metadata.model_validate(data)


# --------------------------------------------------------------------------- applying changes


@dataclass
class Outcome:
    """What one attempted change did: ``done`` or skipped with a ``reason``."""

    done: bool
    reason: str = ""


class Changer:
    """Applies defrag's changes to a memory, journaled and checked against the analysed snapshot.

    An entry may be changed only while it still has the fingerprint it had in ``corpus``
    (or after this run's own last change to it); otherwise the change is skipped.
    """

    def __init__(self, memory: Memory, journal: Journal, corpus: Corpus) -> None:
        self.memory = memory
        self.journal = journal
        self.corpus = corpus
        self.expected: dict[str, str] = {}  # fingerprints after this run's own changes ("" = removed)
        self.stubs_created: set[str] = set()  # never cleaned up by the run that made them

    def _expected(self, path: str) -> str | None:
        if path not in self.expected:
            item = self.corpus.get(path)
            self.expected[path] = item.fingerprint if item is not None else ""
        return self.expected[path]

    def _lock(self) -> Any:
        return self.memory.adapter.lock.exclusive()

    def _real(self, path: str) -> Entry | None:
        """The real entry at ``path`` now, or None if it is gone or a stub."""
        try:
            if self.memory.redirect_of(path) is not None:
                return None
            return self.memory.adapter.read_entry(path, follow=False)
        except (EntryNotFoundError, RedirectError):
            return None

    def _stale(self, path: str, entry: Entry | None) -> Outcome | None:
        """The refusal when ``entry`` (the one at ``path`` now) is not what the analysis saw."""
        if (fingerprint(entry) if entry is not None else None) != self._expected(path):
            return Outcome(False, f"memory://{path} changed since the analysis; run {self.journal.action} again")
        return None

    def _unchanged(self, *paths: str) -> Outcome | None:
        for path in paths:
            if (stale := self._stale(path, self._real(path))) is not None:
                return stale
        return None

    def rewrite(self, item: Item, *, content: str | None = None, metadata: Metadata | None = None) -> Outcome:
        """Write new content and/or metadata to an entry (title kept; a metadata-only change keeps its age)."""
        try:
            with self._lock():
                if (stale := self._unchanged(item.path)) is not None:
                    return stale
                self.journal.before(item.path)
                result = self.memory.write(
                    item.path, item.content if content is None else content,
                    title=item.title, metadata=item.stored if metadata is None else metadata,
                    updated_at=item.updated_at if content is None else None,
                )
                self.expected[item.path] = fingerprint(result.entry)
                self.journal.after(item.path)
        except MemdirError as exc:
            return Outcome(False, exc.message)
        return Outcome(True)

    def update(self, changes: dict[str, dict[str, Any]]) -> dict[str, Outcome]:
        """Set (None: remove) metadata fields of entries, as one change (`Memory.update_metadata_many`:
        content, age, read count and vector stay; the evolution jobs' archive and supersede).

        Args:
            changes: path -> the fields to set.

        Returns:
            path -> what happened to it.
        """
        outcomes: dict[str, Outcome] = {}
        try:
            with self._lock():
                read: dict[str, Entry] = {}  # each entry read once here, for the check, ownership and the journal
                for path in changes:
                    entry = self._real(path)
                    if (stale := self._stale(path, entry)) is not None:
                        outcomes[path] = stale
                        continue
                    try:
                        self.memory.check_change(path, entry=entry)  # another agent's entry: skipped, and said why
                    except NotOwnerError as exc:
                        outcomes[path] = Outcome(False, exc.message)
                        continue
                    if entry is not None:
                        read[path] = entry
                fresh = [path for path in changes if path not in outcomes]
                self.journal.before(*fresh, read=read)
                written = self.memory.update_metadata_many({path: changes[path] for path in fresh})
                for entry in written:
                    self.expected[entry.path] = fingerprint(entry)
                    outcomes[entry.path] = Outcome(True)
                self.journal.after(*(entry.path for entry in written), written={entry.path: entry for entry in written})
        except MemdirError as exc:
            return {path: outcomes.get(path) or Outcome(False, exc.message) for path in changes}
        return {path: outcomes.get(path) or Outcome(False, f"memory://{path} is gone") for path in changes}

    def merge(self, keeper: Item, other: Item, strategy: str) -> Outcome:
        """Merge ``other`` into ``keeper`` and leave a ``# merged → keeper`` stub at ``other``."""
        try:
            with self._lock():
                if (stale := self._unchanged(keeper.path, other.path)) is not None:
                    return stale
                for path in (keeper.path, other.path) if strategy == "combine" else (other.path,):
                    self.memory.check_change(path, "merge")  # both or neither: never half a merge
                if strategy == "combine":
                    current = self.memory.adapter.read_entry(keeper.path, follow=False)
                    self.journal.before(keeper.path)
                    merged = Item.from_entry(current)
                    with self.memory.action("merge", merged=other.path):
                        result = self.memory.write(
                            keeper.path, combine_content(current.content, other.path, other.content),
                            title=current.title, metadata=combine_metadata(merged, other),
                        )
                    self.expected[keeper.path] = fingerprint(result.entry)
                    self.journal.after(keeper.path)
                self.journal.before(other.path)
                self.memory.write_stub(other.path, keeper.path, "merged")
                self.expected[other.path] = ""
                self.stubs_created.add(other.path)
                self.journal.after(other.path)
        except MemdirError as exc:
            return Outcome(False, exc.message)
        return Outcome(True)

    def delete(self, item: Item) -> Outcome:
        """Delete an entry (its prior state stays in the journal)."""
        try:
            with self._lock():
                if (stale := self._unchanged(item.path)) is not None:
                    return stale
                self.memory.check_change(item.path, "delete")  # refused before the journal records anything
                self.journal.before(item.path)
                self.memory.delete(item.path)
                self.expected[item.path] = ""
                self.journal.after(item.path)
        except MemdirError as exc:
            return Outcome(False, exc.message)
        return Outcome(True)

    def delete_stub(self, path: str, target: str) -> Outcome:
        """Delete the stub at ``path`` if it still redirects to ``target``."""
        try:
            with self._lock():
                try:
                    redirect = self.memory.redirect_of(path)
                except (EntryNotFoundError, RedirectError):
                    redirect = None
                if redirect is None or redirect.target != target:
                    return Outcome(False, f"memory://{path} is no longer a stub to memory://{target}")
                self.memory.check_change(path, "delete")  # another agent's stub: skipped, nothing journaled
                self.journal.before(path)
                self.memory.delete(path)
                self.journal.after(path)
        except MemdirError as exc:
            return Outcome(False, exc.message)
        return Outcome(True)


__all__ = [
    "Changer", "Outcome", "choose_keeper", "combine_content", "combine_metadata", "only_in_other",
]
