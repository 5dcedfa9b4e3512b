"""The event queue: events wait in order while processing is blocked, and callers get their results.

Processing is blocked for one reason at a time — COMPACTING (a compaction is running),
PAUSED (a person paused the thread) or STEPPING (stepping mode: one event per ``step``).
Blocking an already blocked queue is refused: two parties would each believe they own the
block, and the first to unblock would release the other's. An event submitted while the
queue is blocked (or while earlier events still wait) is queued behind them, and its
caller holds a `Future` that resolves once the event is processed; a handler's error is
set on that caller's future, and the queue goes on with the next event.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from enum import Enum
from typing import Generic, TypeVar

from memdir.core.errors import InputValidationError

T = TypeVar("T")
R = TypeVar("R")


class BlockingReason(str, Enum):
    COMPACTING = "compacting"
    PAUSED = "paused"
    STEPPING = "stepping"


class QueueBlockedError(InputValidationError):
    """The queue is already blocked; a second block is refused."""


class QueueItemGoneError(InputValidationError):
    """A waiting event left the queue without being processed here (another process took it)."""


class EventQueue(Generic[T, R]):
    """A FIFO of events, processed by ``handler`` at once unless the queue is blocked.

    Args:
        handler: processes one event and returns its result (or raises).
    """

    def __init__(self, handler: Callable[[T], R]) -> None:
        self._handler = handler
        self._items: deque[tuple[T, Future[R]]] = deque()
        self._lock = threading.RLock()
        self.blocked_by: BlockingReason | None = None

    def __len__(self) -> int:
        return len(self._items)

    @property
    def blocked(self) -> bool:
        return self.blocked_by is not None

    def block(self, reason: BlockingReason) -> None:
        """Stop processing; refused when already blocked (for any reason)."""
        with self._lock:
            if self.blocked_by is not None:
                raise QueueBlockedError(
                    f"the queue is already blocked ({self.blocked_by.value}); it cannot be blocked again ({reason.value}).",
                    "Unblock it first (resume, or switch the mode back to auto).",
                )
            self.blocked_by = reason

    def unblock(self) -> None:
        """Allow processing again; queued events wait for `drain` (or the next `submit`)."""
        with self._lock:
            self.blocked_by = None

    def submit(self, event: T) -> Future[R]:
        """Queue ``event``; process it (and any before it) now unless blocked. The future holds its result."""
        future: Future[R] = Future()
        with self._lock:
            self._items.append((event, future))
            if self.blocked_by is None:
                self.drain()
        return future

    def peek(self) -> T | None:
        """The next event, without processing it."""
        with self._lock:
            return self._items[0][0] if self._items else None

    def items(self) -> list[T]:
        """The waiting events, oldest first."""
        with self._lock:
            return [event for event, _ in self._items]

    def discard(self, gone: Callable[[T], bool], reason: str) -> int:
        """Drop the waiting events ``gone`` selects (processed elsewhere); their callers get ``reason`` as an error."""
        with self._lock:
            kept: deque[tuple[T, Future[R]]] = deque()
            dropped = 0
            for event, future in self._items:
                if gone(event):
                    future.set_exception(QueueItemGoneError(reason))
                    dropped += 1
                else:
                    kept.append((event, future))
            self._items = kept
            return dropped

    def process_one(self) -> Future[R] | None:
        """Process the next event even while blocked (stepping); its future, or None when the queue is empty."""
        with self._lock:
            if not self._items:
                return None
            event, future = self._items.popleft()
            try:
                future.set_result(self._handler(event))
            except Exception as exc:  # the caller gets it; the queue goes on
                future.set_exception(exc)
            return future

    def drain(self) -> int:
        """Process queued events in order until the queue is empty or blocked; how many were processed."""
        done = 0
        with self._lock:
            while self._items and self.blocked_by is None:
                self.process_one()
                done += 1
        return done


__all__ = ["BlockingReason", "EventQueue", "QueueBlockedError", "QueueItemGoneError"]
