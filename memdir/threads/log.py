"""A thread's event log: ``<root>/threads/<id>/events.jsonl``, one JSON event per line, append-only.

The log is the thread's only record; everything else (state, pages, vectors) is derived
from it. Appends are serialised across processes by the root's lock (the one entry writes
take, `memdir.storage.directory.locking.RootLock`), validated against the current state before a
byte is written (a refused event changes nothing) and written with one ``write`` on an
``O_APPEND`` descriptor, then fsynced. Reads take no lock: they consume the file up to its
last newline, so a line being written (or left half-written by a writer killed
mid-write) is never read; the next append, holding the lock, cuts such a tail off first.

`EventLog` keeps the state it has read and the byte offset it read to, so asking for the
state again reads only what other processes appended since. A damaged line (not JSON,
nested too deeply, not an event, a sequence number that does not grow, a setting no
thread may have) is skipped with a warning and listed in `EventLog.damaged`; the events
around it still count, and numbering continues after the highest sequence number seen. Every file operation goes
through `memdir.core.files` (confined to the root, regular files only, never blocking), so
a log or thread folder swapped for a link out of the root, or for a named pipe, while the
server runs is refused with a clear error.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memdir.core.errors import InputValidationError
from memdir.core.files import append_bytes, open_regular, stat_regular
from memdir.storage.directory.locking import RootLock
from memdir.threads.model import ThreadState
from memdir.threads.reducers import Event, replay

logger = logging.getLogger(__name__)

LOG_NAME = "events.jsonl"
EventBuilder = Callable[[int, str, ThreadState], Event]
"""Builds the event to append from its sequence number, its time and the state it applies to (chunk ids come from
the sequence number)."""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def encode(event: Event) -> bytes:
    """One log line: compact JSON, non-ASCII kept readable, no raw newline inside."""
    return (json.dumps(event, ensure_ascii=False, separators=(", ", ": ")) + "\n").encode("utf-8")


class EventLog:
    """One thread's log file and the state read from it so far."""

    def __init__(self, root: Path, path: Path, lock: RootLock, by: Callable[[], str | None] = lambda: None) -> None:
        self.root, self.path, self.lock = root, path, lock
        self.by = by
        """Who is appending (an agent's name, or None): recorded as the event's ``by`` unless it names one."""
        self._guard = threading.RLock()  # readers (ThreadContext on the read pool) beside the writer thread
        self._offset = 0
        self._state = ThreadState()
        self._highest_seq = 0  # damaged lines' numbers count too: a new event never reuses one
        self.damaged: list[str] = []
        """One line per damaged log line skipped: where it ends and what is wrong with it."""
        self.queued_ids: set[str] = set()  # ids of waiting messages already written (see memdir.threads.pending)

    def exists(self) -> bool:
        return stat_regular(self.root, self.path) is not None

    def state(self) -> ThreadState:
        """The current state (reads only the bytes appended since the last call)."""
        with self._guard:
            self._catch_up()
            return self._state

    def events(self) -> Iterator[Event]:
        """Every complete event in the log that is a JSON object, from the start (damaged lines left out)."""
        for _, event, problem in self._read_from(0):
            if problem is None:
                yield event

    def append(self, build: EventBuilder) -> tuple[Event, ThreadState]:
        """Append one event (built from its sequence number) and return it with the new state.

        Raises:
            InputValidationError: the event does not apply to the current state; nothing is written.
            LockTimeoutError: another process held the root's lock too long.
        """
        with self.lock.exclusive(), self._guard:
            self._catch_up()
            event = build(max(self._state.seq, self._highest_seq) + 1, now_iso(), self._state)
            who = self.by()
            if who and "by" not in event:
                event = {**event, "by": who}
            state = replay([event], self._state)  # raises before anything is written
            line = encode(event)
            read_to = self._offset
            append_bytes(self.root, self.path, line, cut=lambda size: min(size, read_to))  # past it: a killed writer's tail
            self._offset += len(line)
            self._state = state
            self._highest_seq = max(self._highest_seq, state.seq)
            if "queued" in event:
                self.queued_ids.add(event["queued"])
            return event, state

    def _catch_up(self) -> None:
        st = stat_regular(self.root, self.path)
        size = st.st_size if st is not None else 0
        if size < self._offset:  # replaced or truncated by hand: start over
            self._offset, self._state, self._highest_seq = 0, ThreadState(), 0
            self.queued_ids.clear()
            self.damaged.clear()
        if size == self._offset:
            return
        events: list[Event] = []
        ends: dict[int, int] = {}
        for end, event, problem in self._read_from(self._offset):
            self._offset = end
            if problem is not None:
                self._damage(end, problem)
                continue
            ends[id(event)] = end
            events.append(event)
            seq = event.get("seq")
            if isinstance(seq, int) and not isinstance(seq, bool):
                self._highest_seq = max(self._highest_seq, seq)
            if "queued" in event:
                self.queued_ids.add(event["queued"])
        if events:
            rejected: list[tuple[Event, InputValidationError]] = []
            self._state = replay(events, self._state, rejected)
            for event, error in rejected:
                self._damage(ends[id(event)], error.message)
            self._highest_seq = max(self._highest_seq, self._state.seq)

    def _damage(self, end: int, problem: str) -> None:
        note = f"the line ending at byte {end} was skipped: {problem.rstrip('.')}"
        self.damaged.append(note)
        logger.warning("%s: %s", self.path, note)

    def _read_from(self, offset: int) -> Iterator[tuple[int, Event, str | None]]:
        """(offset after the line, event, what is wrong with it or None) for each complete line from ``offset``."""
        try:
            with open_regular(self.root, self.path) as handle:
                handle.seek(offset)
                data = handle.read()
        except (FileNotFoundError, NotADirectoryError):
            return
        position = offset
        start = 0
        while (end := data.find(b"\n", start)) >= 0:  # a tail without newline: being written, or left by a killed writer
            raw, start = data[start:end + 1], end + 1
            position += len(raw)
            if not raw.strip():
                continue
            try:
                event: Any = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                yield position, {}, f"not a JSON event ({exc})"
                continue
            except RecursionError:
                yield position, {}, "nested too deeply to be an event"
                continue
            if not isinstance(event, dict):
                yield position, {}, "not a JSON object"
            elif "seq" not in event:
                yield position, {}, "an event without a seq"
            else:
                yield position, event, None


__all__ = ["LOG_NAME", "EventBuilder", "EventLog", "encode", "now_iso"]
