"""A thread's event log: ``<root>/threads/<id>/events.jsonl``, one JSON event per line, append-only.

The log is the thread's only record; everything else (state, pages, vectors) is derived
from it. Appends are serialised across processes by the root's lock (the one entry writes
take, `memdir.storage.directory.locking.RootLock`), validated against the current state before a
byte is written (a refused event changes nothing) and written with one ``write`` on an
``O_APPEND`` descriptor, then fsynced. Reads take no lock: they consume the file up to its
last newline, so a line being written (or left half-written by a writer killed
mid-write) is never read; the next append, holding the lock, cuts such a tail off first.

`EventLog` keeps the state it has read and the byte offset it read to, so asking for the
state again reads only what other processes appended since. Every file operation goes
through `memdir.core.files` (confined to the root, regular files only, never blocking), so
a log or thread folder swapped for a link out of the root, or for a named pipe, while the
server runs is refused with a clear error.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memdir.core.errors import InputValidationError
from memdir.core.files import append_bytes, open_regular, stat_regular
from memdir.storage.directory.locking import RootLock
from memdir.threads.model import ThreadState
from memdir.threads.reducers import Event, replay

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

    def __init__(self, root: Path, path: Path, lock: RootLock) -> None:
        self.root, self.path, self.lock = root, path, lock
        self._offset = 0
        self._state = ThreadState()
        self.queued_ids: set[str] = set()  # ids of waiting messages already written (see memdir.threads.pending)

    def exists(self) -> bool:
        return stat_regular(self.root, self.path) is not None

    def state(self) -> ThreadState:
        """The current state (reads only the bytes appended since the last call)."""
        self._catch_up()
        return self._state

    def events(self) -> Iterator[Event]:
        """Every complete event in the log, from the start."""
        for _, event in self._read_from(0):
            yield event

    def append(self, build: EventBuilder) -> tuple[Event, ThreadState]:
        """Append one event (built from its sequence number) and return it with the new state.

        Raises:
            InputValidationError: the event does not apply to the current state; nothing is written.
            LockTimeoutError: another process held the root's lock too long.
        """
        with self.lock.exclusive():
            self._catch_up()
            event = build(self._state.version + 1, now_iso(), self._state)
            state = replay([event], self._state)  # raises before anything is written
            line = encode(event)
            read_to = self._offset
            append_bytes(self.root, self.path, line, cut=lambda size: min(size, read_to))  # past it: a killed writer's tail
            self._offset += len(line)
            self._state = state
            if "queued" in event:
                self.queued_ids.add(event["queued"])
            return event, state

    def _catch_up(self) -> None:
        st = stat_regular(self.root, self.path)
        size = st.st_size if st is not None else 0
        if size < self._offset:  # replaced or truncated by hand: start over
            self._offset, self._state = 0, ThreadState()
            self.queued_ids.clear()
        if size == self._offset:
            return
        events = []
        for end, event in self._read_from(self._offset):
            events.append(event)
            self._offset = end
            if "queued" in event:
                self.queued_ids.add(event["queued"])
        if events:
            self._state = replay(events, self._state)

    def _read_from(self, offset: int) -> Iterator[tuple[int, Event]]:
        """(offset after the line, event) for each complete line from ``offset``."""
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
                raise InputValidationError(
                    f"{self.path} holds a line that is not a JSON event (ending at byte {position}): {exc}.",
                    "Fix or remove that line by hand; every other event is intact.",
                ) from exc
            if not isinstance(event, dict):
                raise InputValidationError(f"{self.path}: a line ending at byte {position} is not a JSON object.",
                                           "Fix or remove that line by hand.")
            yield position, event


__all__ = ["LOG_NAME", "EventBuilder", "EventLog", "encode", "now_iso"]
