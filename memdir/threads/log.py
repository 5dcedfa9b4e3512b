"""A thread's event log: one JSON event per line, append-only, kept by the store (`memdir.storage.base.ThreadLogs`).

The log is the thread's only record; everything else (state, pages, vectors) is derived
from it. The directory store keeps it in ``<root>/threads/<id>/events.jsonl``, the
PostgreSQL store in rows of a table. Appends are serialised across processes (and
servers) by the store's lock, validated against the current state before anything is
written (a refused event changes nothing) and written whole. Reads take no lock and see
only complete lines.

`EventLog` keeps the state it has read and the cursor it read to, so asking for the
state again reads only what other processes appended since. A damaged line (not JSON,
nested too deeply, not an event, a sequence number that does not grow, a setting no
thread may have) is skipped with a warning and listed in `EventLog.damaged`; the events
around it still count, and numbering continues after the highest sequence number seen.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

from memdir.core.errors import InputValidationError
from memdir.storage.base import ThreadLogs
from memdir.threads.model import ThreadState
from memdir.threads.reducers import Event, replay

logger = logging.getLogger(__name__)

EventBuilder = Callable[[int, str, ThreadState], Event]
"""Builds the event to append from its sequence number, its time and the state it applies to (chunk ids come from
the sequence number)."""


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def encode(event: Event) -> bytes:
    """One log line: compact JSON, non-ASCII kept readable, no raw newline inside."""
    return (json.dumps(event, ensure_ascii=False, separators=(", ", ": ")) + "\n").encode("utf-8")


class EventLog:
    """One thread's log and the state read from it so far."""

    def __init__(self, logs: ThreadLogs, thread: str, by: Callable[[], str | None] = lambda: None) -> None:
        self.logs, self.thread = logs, thread
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
        """Whether the log exists: known without asking the store once something was read from it."""
        return self._offset > 0 or self.logs.exists(self.thread)

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
        with self.logs.lock.exclusive(), self._guard:
            self._catch_up()
            event = self._stamped(build(max(self._state.seq, self._highest_seq) + 1, now_iso(), self._state))
            state = replay([event], self._state)  # raises before anything is written
            self._offset = self.logs.append(self.thread, encode(event), self._offset)
            self._state = state
            self._highest_seq = max(self._highest_seq, state.seq)
            if "queued" in event:
                self.queued_ids.add(event["queued"])
            return event, state

    def create(self, builds: list[EventBuilder]) -> list[Event] | None:
        """Start the log with these events, written in one step (a new thread's first events, and the message that
        made it, cost one durable write); None when the log exists (another process created it meanwhile).

        Raises:
            InputValidationError: an event does not apply; nothing is written.
        """
        with self.logs.lock.exclusive(), self._guard:
            if self.exists():
                return None
            state, events = ThreadState(), []
            for build in builds:
                event = self._stamped(build(state.seq + 1, now_iso(), state))
                state = replay([event], state)  # raises before anything is written
                events.append(event)
            self._offset = self.logs.create(self.thread, [encode(event) for event in events])
            self._state, self._highest_seq = state, state.seq
            self.queued_ids.update(event["queued"] for event in events if "queued" in event)
            return events

    def _stamped(self, event: Event) -> Event:
        """``event`` with who appends it as its ``by``, unless it names one."""
        who = self.by()
        return {**event, "by": who} if who and "by" not in event else event

    def _catch_up(self) -> None:
        lines = self.logs.read(self.thread, self._offset)
        if lines is None:  # replaced or cut by hand: start over
            self._offset, self._state, self._highest_seq = 0, ThreadState(), 0
            self.queued_ids.clear()
            self.damaged.clear()
            lines = self.logs.read(self.thread, 0) or []
        if not lines:
            return
        events: list[Event] = []
        ends: dict[int, int] = {}
        for end, event, problem in self._parsed(lines):
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
        note = f"the line ending at {end} was skipped: {problem.rstrip('.')}"
        self.damaged.append(note)
        logger.warning("thread %s: %s", self.thread, note)

    def _read_from(self, cursor: int) -> Iterator[tuple[int, Event, str | None]]:
        """(cursor after the line, event, what is wrong with it or None) for each complete line after ``cursor``."""
        return self._parsed(self.logs.read(self.thread, cursor) or [])

    @staticmethod
    def _parsed(lines: list[tuple[int, bytes]]) -> Iterator[tuple[int, Event, str | None]]:
        for end, raw in lines:
            if not raw.strip():
                continue
            try:
                event: Any = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                yield end, {}, f"not a JSON event ({exc})"
                continue
            except RecursionError:
                yield end, {}, "nested too deeply to be an event"
                continue
            if not isinstance(event, dict):
                yield end, {}, "not a JSON object"
            elif "seq" not in event:
                yield end, {}, "an event without a seq"
            else:
                yield end, event, None


__all__ = ["EventBuilder", "EventLog", "encode", "now_iso"]
