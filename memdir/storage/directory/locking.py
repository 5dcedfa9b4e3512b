"""The root's cross-process lock: many readers or one writer, at ``<root>/.lock``.

SwarmMemory serialised writers with ``flock`` on ``<root>/.lock``; memdir keeps that
file, so a memdir process and a SwarmMemory process on one root exclude each other.

Two details make a plain ``flock`` wrapper unsafe, and are why this module exists:

* ``flock`` locks belong to an *open file description*. Two descriptors of the same
  file in one process conflict with each other, so a thread that takes the lock and
  then calls code taking it again would deadlock against itself. All `RootLock`
  objects for one lock file in a process therefore share one descriptor, one
  `threading.RLock` and a depth counter: the lock is re-entrant per thread, and
  threads of one process serialise on the `RLock` before touching the file.
  That descriptor stays open between holds (unlocked, while it is still the file at the
  path), which saves opening and closing the file on every change; `RootLock.close`, or
  the last `RootLock` on the file being collected, closes it.
* A shared lock cannot be upgraded in place without a window in which another writer
  may slip in, so asking for the exclusive lock while holding only the shared one is
  a programming error (`RuntimeError`), not a silent race.

Waiting is fair: a process that finds the lock taken makes a *blocking* ``flock`` request,
which joins the kernel's queue of waiters (Linux wakes the request that has waited
longest, and one arriving later queues behind it), instead of polling with sleeps, where
whoever happens to retry right after a release wins and a writer can wait for tens of
seconds while others go again and again. A blocking request has no timeout, so it is
made on a short-lived helper thread (`_QueuedRequest`) that the caller waits for with
one; a request given up on releases the lock as soon as it gets it.

A writer killed while holding the lock can leave work to finish (a transaction
journal). The optional ``needs_repair``/``repair`` callbacks make every *outermost*
acquisition hand out a consistent root: the exclusive lock repairs before returning,
and a shared acquisition that finds repair needed steps aside, repairs under the
exclusive lock, and takes the shared lock again — so even ``with lock.shared():``
held by a caller never exposes a dead writer's half-finished change.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Literal

import portalocker

from memdir.core.errors import LockTimeoutError
from memdir.core.files import append_regular, open_regular

LOCK_FILE_NAME = ".lock"
Mode = Literal["shared", "exclusive"]


class _LockState:
    """What one process knows about one lock file; shared by every `RootLock` on it."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.rlock = threading.RLock()
        self.file: IO[bytes] | None = None
        """The lock file, open: locked while ``depth`` > 0, else kept for the next hold."""
        self.depth = 0
        self.mode: Mode | None = None
        self.owner: int | None = None
        self.close_when_released = False
        self._closer: weakref.finalize | None = None

    def keep(self, handle: IO[bytes]) -> None:
        """Hold ``handle`` as the lock file's descriptor (closed with this state, should nobody close it)."""
        self.file = handle
        self._closer = weakref.finalize(self, handle.close)

    def drop(self) -> IO[bytes] | None:
        """Let go of the descriptor (the caller closes it or hands it on)."""
        handle, self.file = self.file, None
        if self._closer is not None:
            self._closer.detach()
            self._closer = None
        return handle

    def close_file(self) -> None:
        """Close the descriptor (which releases the lock, should it be held)."""
        handle = self.drop()
        if handle is not None:
            handle.close()

    def reset_after_fork(self) -> None:
        """Forget a lock inherited through ``fork``: the child must never reuse the parent's descriptor.

        The inherited descriptor shares the parent's open file description, so
        locking or unlocking it would act on the *parent's* lock. Dropping the
        Python object without closing it would close it on garbage collection,
        which is harmless (the parent still holds its own descriptor); closing it
        explicitly here is equally harmless and keeps the child tidy.
        """
        try:
            self.close_file()
        except OSError:
            pass
        self.rlock = threading.RLock()
        self.depth = 0
        self.mode = None
        self.owner = None


_STATES: weakref.WeakValueDictionary[str, _LockState] = weakref.WeakValueDictionary()
"""Lock file -> its state while a `RootLock` on it lives."""
_REGISTRY_LOCK = threading.Lock()


def _lock_file(path: str, handle: IO[bytes], flags: portalocker.LockFlags) -> None:
    """``flock`` the handle.

    Raises:
        portalocker.exceptions.AlreadyLocked: a non-blocking request found the lock taken.
        OSError: the file cannot be locked at all.
    """
    try:
        portalocker.lock(handle, flags)
    except portalocker.exceptions.AlreadyLocked:
        raise
    except portalocker.exceptions.LockException as exc:
        raise OSError(
            f"Could not lock {path}: {exc}. Check that the memory root is on a "
            "local filesystem that supports file locks and is writable."
        ) from exc


class _QueuedRequest:
    """A blocking ``flock`` request, made on a helper thread so that its caller can give up.

    The request waits in the kernel's queue (see the module docstring). A caller whose
    timeout passes abandons it; the thread then releases the lock the moment it gets it
    (by closing the handle), so the processes queued behind are served next.
    """

    def __init__(self, path: str, handle: IO[bytes], flags: portalocker.LockFlags) -> None:
        self._path, self._handle, self._flags = path, handle, flags
        self._done = threading.Event()
        self._guard = threading.Lock()
        self._abandoned = False
        self._error: BaseException | None = None
        threading.Thread(target=self._run, name="memdir-lock-wait", daemon=True).start()

    def _run(self) -> None:
        try:
            _lock_file(self._path, self._handle, self._flags)
        except BaseException as exc:  # handed to the caller (or dropped with the request)
            self._error = exc
        with self._guard:
            self._done.set()
            if self._abandoned or self._error is not None:
                self._handle.close()

    def wait(self, timeout: float) -> bool:
        """True once the lock is held; False if ``timeout`` passed first (the request is abandoned).

        Raises:
            OSError: the file cannot be locked at all.
        """
        try:
            self._done.wait(timeout)
        finally:  # also on KeyboardInterrupt: nobody would release a lock granted later
            with self._guard:
                self._abandoned = not self._done.is_set()
        if self._abandoned:
            return False
        if self._error is not None:
            raise self._error
        return True


def _state_for(path: Path) -> _LockState:
    key = os.path.realpath(path)
    with _REGISTRY_LOCK:
        state = _STATES.get(key)
        if state is None:
            state = _STATES[key] = _LockState(key)
        return state


def _after_fork_in_child() -> None:
    global _REGISTRY_LOCK
    _REGISTRY_LOCK = threading.Lock()
    for state in list(_STATES.values()):
        state.reset_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class RootLock:
    """Re-entrant shared/exclusive lock on one lock file, across threads and processes.

    Args:
        path: the lock file (``<root>/.lock``); created, with its folder, on first use.
        timeout: seconds to wait for the lock before `LockTimeoutError`.
        needs_repair: cheap check, run on each outermost acquisition: True if a dead
            lock holder left work to finish.
        repair: finishes that work; runs under the exclusive lock and must not take
            this lock itself.
        create: False for a root opened read-only: the lock file is opened for reading
            (``flock`` works on such a descriptor) and never created; while it does not
            exist no memdir process has written the root, so there is nothing to lock.

    Every `RootLock` for the same file in one process shares state, so nesting works
    even across two adapters opened on the same root.
    """

    def __init__(
        self,
        path: Path | str,
        timeout: float = 30.0,
        *,
        needs_repair: Callable[[], bool] | None = None,
        repair: Callable[[], None] | None = None,
        create: bool = True,
    ) -> None:
        self.path = Path(path)
        self.timeout = float(timeout)
        self.create = create
        self._needs_repair = needs_repair
        self._repair = repair
        self._state = _state_for(self.path)

    @property
    def mode(self) -> Mode | None:
        """The lock the *calling thread* holds: ``"shared"``, ``"exclusive"`` or None."""
        state = self._state
        if state.depth and state.owner == threading.get_ident():
            return state.mode
        return None

    @contextmanager
    def exclusive(self, timeout: float | None = None) -> Iterator[None]:
        """Hold the lock alone: no other process reads or writes meanwhile.

        Args:
            timeout: seconds to wait, instead of the lock's own ``timeout``
                (0: take it only if it is free right now).

        Raises:
            LockTimeoutError: another process held the lock for longer than ``timeout``.
            RuntimeError: the calling thread holds only the shared lock (no upgrades).
        """
        with self._hold("exclusive", self.timeout if timeout is None else timeout):
            yield

    @contextmanager
    def shared(self) -> Iterator[None]:
        """Hold the lock for reading: other readers may too, writers wait.

        Inside `exclusive` this is a no-op (the thread already excludes everyone).

        Raises:
            LockTimeoutError: a writer held the lock for longer than ``timeout``.
        """
        with self._hold("shared", self.timeout):
            yield

    @contextmanager
    def _hold(self, mode: Mode, timeout: float) -> Iterator[None]:
        deadline = time.monotonic() + timeout
        state = self._state
        if not state.rlock.acquire(timeout=max(timeout, 0.0)):
            raise self._timeout_error(mode, "another thread of this process")
        try:
            if state.depth == 0:
                self._acquire_file(mode, deadline)
                try:
                    self._make_consistent(mode, deadline)
                except BaseException:
                    self._release_file()
                    raise
                state.mode, state.owner = mode, threading.get_ident()
            elif mode == "exclusive" and state.mode == "shared":
                raise RuntimeError(
                    f"Cannot take the exclusive lock on {state.path} while this thread holds only the "
                    "shared lock: upgrading would let another writer slip in between. Take the "
                    "exclusive lock first (it covers reads too)."
                )
            state.depth += 1
        except BaseException:
            state.rlock.release()
            raise
        try:
            yield
        finally:
            state.depth -= 1
            try:
                if state.depth == 0:
                    self._release_file()
            finally:
                state.rlock.release()

    def _make_consistent(self, mode: Mode, deadline: float) -> None:
        """Run the repair callback if needed, holding (or briefly trading up to) the exclusive lock."""
        if self._needs_repair is None or self._repair is None or not self._needs_repair():
            return
        if mode == "exclusive":
            self._repair()
            return
        while True:
            # Repairing under a shared lock would change files under other readers' feet.
            self._release_file()
            self._acquire_file("exclusive", deadline)
            if self._needs_repair():
                self._repair()
            self._release_file()
            self._acquire_file("shared", deadline)
            if not self._needs_repair():
                return

    def _acquire_file(self, mode: Mode, deadline: float) -> None:
        state = self._state
        handle = self._open_file()
        if handle is None:
            return
        flags = portalocker.LockFlags.EXCLUSIVE if mode == "exclusive" else portalocker.LockFlags.SHARED
        try:
            _lock_file(state.path, handle, flags | portalocker.LockFlags.NON_BLOCKING)
        except portalocker.exceptions.AlreadyLocked as taken:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._timeout_error(mode, "another process") from taken
            # From here the request owns the handle until it reports the lock taken.
            state.drop()
            if not _QueuedRequest(state.path, handle, flags).wait(remaining):
                raise self._timeout_error(mode, "another process") from taken
            state.keep(handle)
        except BaseException:
            if state.file is handle:
                state.close_file()
            raise

    def _open_file(self) -> IO[bytes] | None:
        """The lock file's descriptor, unlocked: the one kept since the last hold while it is still the
        file at the path (not deleted, nor replaced), else a new one (None: a read-only root's, missing)."""
        state = self._state
        if state.file is not None:
            try:
                if os.path.samestat(os.fstat(state.file.fileno()), os.lstat(state.path)):
                    return state.file
            except OSError:
                pass
            state.close_file()
        if self.create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # Confined like every file of the root: a link or pipe swapped in for .lock while serving is refused.
            handle = append_regular(self.path.parent, state.path)
        else:
            try:
                handle = open_regular(self.path.parent, state.path)  # a read-only root's: never created
            except FileNotFoundError:
                return None
        state.keep(handle)
        return handle

    def _release_file(self) -> None:
        state = self._state
        state.mode = state.owner = None
        if state.file is None:
            return
        try:
            portalocker.unlock(state.file)
        except portalocker.exceptions.LockException:
            state.close_file()  # closing the descriptor releases the lock anyway
        if state.close_when_released and state.depth == 0:
            state.close_when_released = False
            state.close_file()

    def close(self) -> None:
        """Close the lock file's descriptor kept open between holds (the next hold opens it again), so
        that nothing of this process keeps the root's files open (a root to unmount, to remount read-only).

        Every `RootLock` on the file shares that descriptor. A thread holding the lock meanwhile keeps
        it until its hold ends; it is closed then.
        """
        state = self._state
        if not state.rlock.acquire(timeout=self.timeout):
            state.close_when_released = True
            return
        try:
            if state.depth:
                state.close_when_released = True
            else:
                state.close_file()
        finally:
            state.rlock.release()

    def _timeout_error(self, mode: Mode, holder: str) -> LockTimeoutError:
        return LockTimeoutError(
            f"Timed out after {self.timeout:g} s waiting for the {mode} lock on {self._state.path}, "
            f"held by {holder}.",
            "Retry shortly; if it persists, look for a stuck memdir process on this memory root "
            "or raise MEMDIR_LOCK_TIMEOUT.",
        )
