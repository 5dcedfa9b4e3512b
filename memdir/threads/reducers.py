"""Events to state: a registry of reducers, one per operation, and replay.

An event is a JSON object ``{"seq", "at", "op", ...}``. The operations:

=============  ====================================================================
ADD            ``chunk``: append it (its id must be new)
UPDATE         ``id``, ``changes``: replace some fields of one chunk (not its id)
DELETE         ``ids``: drop these chunks
REORDER        ``ids``: the same chunks in a new order (every id exactly once)
REPLACE        ``id``, ``chunk``: one chunk takes another's place
BATCH_REPLACE  ``ids``, ``chunk``: several chunks become one, at the first one's place (compaction); the
               replaced chunks stay in the state's archive, so nothing compacted is lost
BATCH          ``events``: several operations applied as one event
CONFIGURE      ``key``, ``value``: the thread's strategy, execution mode, referenced pages, origin, owner,
               the roles it is visible to
=============  ====================================================================

Reducers work on a mutable `Draft` so that replaying ten thousand events copies the chunk
list once, not once per event; `apply` and `replay` hand back the immutable `ThreadState`.
Replaying a log always gives the same state (the property test in tests/threads checks it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from operator import attrgetter
from types import MappingProxyType
from typing import Any, cast

from memdir.core.errors import InputValidationError
from memdir.threads.model import MODES, STRATEGIES, Chunk, ThreadState, is_thread_id, sequence_number

Event = dict[str, Any]
_ID = attrgetter("id")


@dataclass
class Draft:
    """A `ThreadState` being changed in place by reducers.

    What costs a pass over every chunk is done only when a reducer needs it: the set of
    chunk ids (`ids`, for O(1) checks) is built on first use, and the ids of a draft that
    only grew are its state's ids plus the new ones. The archive of compacted chunks is
    shared with the state it came from until a reducer adds to it (`archived`), so an
    append does not copy it.
    """

    chunks: list[Chunk] = field(default_factory=list)
    version: int = 0
    settings: dict[str, Any] = field(default_factory=dict)
    archive: Mapping[str, Chunk] = field(default_factory=dict)
    seq: int = 0
    archived_turns: int = 0
    owns_archive: bool = False
    top_number: int = 0
    grown_from: tuple[str, ...] | None = ()
    """The ids of the chunks the draft started with, while it has only grown (None once a reducer changed them)."""
    _ids: set[str] | None = None

    @classmethod
    def of(cls, state: ThreadState) -> Draft:
        settings = {key: getattr(state, key) for key in SETTINGS}
        return cls(list(state.chunks), state.version, settings, state.archive, state.seq, state.archived_turns,
                   top_number=state.top_number, grown_from=state.chunk_ids)

    @property
    def ids(self) -> set[str]:
        """The chunks' ids (kept up to date by the reducers once built)."""
        if self._ids is None:
            self._ids = set(map(_ID, self.chunks))
        return self._ids

    def reshaped(self) -> None:
        """Note that a reducer changed chunks other than by adding at the end."""
        self.grown_from = None

    def freeze(self) -> ThreadState:
        chunks = tuple(self.chunks)
        known = self.grown_from
        if known is not None:
            chunk_ids = known + tuple(map(_ID, chunks[len(known):]))
        else:
            chunk_ids = tuple(map(_ID, chunks))
        archive = self.archive if isinstance(self.archive, MappingProxyType) else MappingProxyType(self.archive)
        self.owns_archive = False  # the state now shares it: a later change copies it first
        return ThreadState(chunks=chunks, chunk_ids=chunk_ids, version=self.version,
                           archive=archive, seq=self.seq, archived_turns=self.archived_turns,
                           top_number=self.top_number, **self.settings)

    def archived(self, chunks: Iterable[Chunk]) -> None:
        """Keep ``chunks`` (replaced by a summary) in the archive; the first time, in a copy of its own (states
        share the one they were made from), so a replay copies it once, not once per compaction."""
        if not self.owns_archive:
            shared = self.archive
            copy = shared.copy() if isinstance(shared, (dict, MappingProxyType)) else dict(shared)  # C speed
            self.archive, self.owns_archive = copy, True
        archive = cast("dict[str, Chunk]", self.archive)
        for chunk in chunks:
            archive[chunk.id] = chunk
            if not chunk.is_summary:
                self.archived_turns += 1

    def add(self, chunk: Chunk) -> None:
        """Append a new chunk (its id checked)."""
        self.check_new(chunk)
        self.chunks.append(chunk)
        if self._ids is not None:
            self._ids.add(chunk.id)

    def check_known(self, chunk_ids: Iterable[str]) -> None:
        missing = [chunk_id for chunk_id in chunk_ids if chunk_id not in self.ids]
        if missing:
            raise InputValidationError(f"no chunk {missing[0]!r} in this thread.", "ThreadControl(action='state') lists the chunk ids.")

    def position(self, chunk_id: str) -> int:
        self.check_known([chunk_id])
        return next(index for index, chunk in enumerate(self.chunks) if chunk.id == chunk_id)

    def check_new(self, chunk: Chunk) -> None:
        """Refuse ``chunk`` unless its id is new; a chunk numbered above every one the thread had is new at once."""
        number = sequence_number(chunk.id)
        if number is not None and number > self.top_number:
            self.top_number = number
        elif chunk.id in self.ids or chunk.id in self.archive:
            raise InputValidationError(f"chunk id {chunk.id!r} is already in this thread.", "Every chunk needs a new id.")


Reducer = Callable[[Draft, Event], None]
REDUCERS: dict[str, Reducer] = {}


def reducer(op: str) -> Callable[[Reducer], Reducer]:
    """Register the reducer of operation ``op``."""

    def register(fn: Reducer) -> Reducer:
        REDUCERS[op] = fn
        return fn

    return register


@reducer("ADD")
def _add(draft: Draft, event: Event) -> None:
    chunk = Chunk.from_json(event["chunk"])
    draft.add(chunk)


_UPDATABLE = {f.name for f in fields(Chunk)} - {"id"}


@reducer("UPDATE")
def _update(draft: Draft, event: Event) -> None:
    index = draft.position(event["id"])
    changes = dict(event["changes"])
    unknown = set(changes) - _UPDATABLE
    if unknown:
        raise InputValidationError(f"UPDATE cannot change {', '.join(sorted(unknown))}.", f"Fields: {', '.join(sorted(_UPDATABLE))}.")
    if "parents" in changes:
        changes["parents"] = tuple(changes["parents"])
    draft.chunks[index] = replace(draft.chunks[index], **changes)
    draft.reshaped()


@reducer("DELETE")
def _delete(draft: Draft, event: Event) -> None:
    doomed = set(event["ids"])
    draft.check_known(doomed)
    draft.chunks = [chunk for chunk in draft.chunks if chunk.id not in doomed]
    draft.ids.difference_update(doomed)
    draft.reshaped()


@reducer("REORDER")
def _reorder(draft: Draft, event: Event) -> None:
    order = list(event["ids"])
    by_id = {chunk.id: chunk for chunk in draft.chunks}
    if sorted(order) != sorted(by_id):
        raise InputValidationError("REORDER must list every chunk id of the thread exactly once.", "Send the full new order.")
    draft.chunks = [by_id[chunk_id] for chunk_id in order]
    draft.reshaped()


@reducer("REPLACE")
def _replace(draft: Draft, event: Event) -> None:
    index = draft.position(event["id"])
    chunk = Chunk.from_json(event["chunk"])
    if chunk.id != event["id"]:
        draft.check_new(chunk)
    draft.chunks[index] = chunk
    draft.ids.discard(event["id"])
    draft.ids.add(chunk.id)
    draft.reshaped()


@reducer("BATCH_REPLACE")
def _batch_replace(draft: Draft, event: Event) -> None:
    doomed = list(event["ids"])
    if not doomed:
        raise InputValidationError("BATCH_REPLACE needs at least one chunk id.", "List the chunks the new one replaces.")
    gone = set(doomed)
    draft.check_known(gone)
    chunk = Chunk.from_json(event["chunk"])
    if chunk.id not in gone:
        draft.check_new(chunk)
    first = len(draft.chunks)  # the replaced chunks are recent ones as a rule: look for them from the end
    unseen = set(gone)
    while unseen:
        first -= 1
        unseen.discard(draft.chunks[first].id)
    kept: list[Chunk] = [chunk]  # the new chunk takes the place of the first one it replaces
    replaced: list[Chunk] = []
    for existing in draft.chunks[first:]:
        (replaced if existing.id in gone else kept).append(existing)
    draft.chunks[first:] = kept
    draft.archived(replaced)
    draft.ids.difference_update(gone)
    draft.ids.add(chunk.id)
    draft.reshaped()


@reducer("BATCH")
def _batch(draft: Draft, event: Event) -> None:
    for inner in event["events"]:
        reduce_into(draft, inner)


SETTINGS = ("strategy", "mode", "refs", "forked_from", "owner", "visible_to")
_REFERENCE = re.compile(r"[pc]\d+")


def _setting_problem(key: str, value: Any) -> str | None:
    """Why ``value`` may not be the thread's ``key`` (None: it may)."""
    if key == "strategy" and value not in STRATEGIES:
        return f"strategy must be one of {', '.join(STRATEGIES)}; got {value!r}"
    if key == "mode" and value not in MODES:
        return f"mode must be one of {', '.join(MODES)}; got {value!r}"
    if key == "refs" and not (isinstance(value, list) and all(isinstance(v, str) and _REFERENCE.fullmatch(v) for v in value)):
        return f"refs must be a list of page ids ('p3') and chunk ids ('c41'); got {value!r}"
    if key == "forked_from" and value is not None and not is_thread_id(value):
        return f"forked_from must be a thread id; got {value!r}"
    if key == "owner" and value is not None and not (isinstance(value, str) and value.strip()):
        return f"owner must be an agent name; got {value!r}"
    if key == "visible_to" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return f"visible_to must be a list of role names; got {value!r}"
    return None


@reducer("CONFIGURE")
def _configure(draft: Draft, event: Event) -> None:
    key = event["key"]
    if key not in SETTINGS:
        raise InputValidationError(f"CONFIGURE cannot set {key!r}.", f"Settings: {', '.join(SETTINGS)}.")
    value = event["value"]
    problem = _setting_problem(key, value)
    if problem:
        raise InputValidationError(f"CONFIGURE: {problem}.", "Fix or remove that event.")
    draft.settings[key] = tuple(value) if key in ("refs", "visible_to") else value


def reduce_into(draft: Draft, event: Event) -> None:
    """Apply one operation to ``draft`` (no version change: `apply`/`replay` count whole events)."""
    _reduce(draft, event, event.get("op"))


def _reduce(draft: Draft, event: Event, op: object) -> None:
    fn = REDUCERS.get(op) if type(op) is str else None
    if fn is None:
        raise InputValidationError(f"unknown thread operation {op!r}.", f"Operations: {', '.join(REDUCERS)}.")
    try:
        fn(draft, event)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InputValidationError(f"malformed {op} event: {type(exc).__name__}: {exc}.", "See memdir.threads.reducers for each operation's fields.") from exc


def _check_seq(draft: Draft, event: Event) -> int | None:
    """The event's sequence number, if it has one: a whole number above every earlier one."""
    seq = event.get("seq")
    if seq is None and "seq" not in event:
        return None
    if type(seq) is not int or seq < 1:  # (a bool is no sequence number)
        raise InputValidationError(f"seq must be a whole number >= 1; got {seq!r}.", "Fix or remove that event.")
    if seq <= draft.seq:
        raise InputValidationError(f"seq {seq} does not follow seq {draft.seq}: sequence numbers only grow.",
                                   "Fix or remove that event.")
    return seq


def _step(draft: Draft, event: Event) -> Draft:
    """``draft`` after one whole event; a failing event raises and leaves ``draft`` as it was."""
    if not isinstance(event, dict):
        raise InputValidationError(f"an event must be a JSON object; got {type(event).__name__}.", "Fix or remove it.")
    seq = _check_seq(draft, event)
    op = event.get("op")
    if op == "BATCH":  # several operations: on a copy, so that a failing one leaves nothing behind
        work = Draft.of(draft.freeze())
        _reduce(work, event, op)
        draft = work
    else:  # every other reducer checks before it changes anything
        _reduce(draft, event, op)
    draft.version += 1
    if seq is not None:
        draft.seq = seq
    return draft


def apply(state: ThreadState, event: Event) -> ThreadState:
    """The state after one more event (``state`` itself is untouched; a failing event raises and changes nothing)."""
    return replay([event], state)


def replay(events: Iterable[Event], start: ThreadState | None = None,
           rejected: list[tuple[Event, InputValidationError]] | None = None) -> ThreadState:
    """The state after ``events``, from ``start`` (default: an empty thread).

    Raises:
        InputValidationError: an event does not apply, unless ``rejected`` is given: then
            such an event is skipped and added to it with the reason.
    """
    draft = Draft.of(start or ThreadState())
    for event in events:
        try:
            draft = _step(draft, event)
        except InputValidationError as exc:
            if rejected is None:
                raise
            rejected.append((event, exc))
    return draft.freeze()


__all__ = ["REDUCERS", "SETTINGS", "Draft", "Event", "apply", "reducer", "reduce_into", "replay"]
