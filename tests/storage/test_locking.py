"""memdir.storage.directory.locking: re-entrant shared/exclusive root lock across threads and processes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memdir.core.errors import LockTimeoutError
from memdir.storage.directory.locking import RootLock

_HOLDER = """
import sys
from memdir.storage.directory.locking import RootLock
lock = RootLock(sys.argv[1], timeout=10)
with getattr(lock, sys.argv[2])():
    print("locked", flush=True)
    sys.stdin.readline()
"""


@contextmanager
def held_by_other_process(lock_file: Path, mode: str) -> Iterator[None]:
    """Another process holding the lock (``mode`` = "exclusive" or "shared") until the block ends."""
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(lock_file), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdin is not None and child.stdout is not None
        try:
            assert child.stdout.readline().strip() == "locked"
            yield
        finally:
            child.stdin.write("\n")
            child.stdin.flush()
            child.wait(timeout=10)


@pytest.fixture
def lock_file(tmp_path: Path) -> Path:
    return tmp_path / "root" / ".lock"


def test_creates_the_lock_file_and_its_folder(lock_file: Path) -> None:
    with RootLock(lock_file).exclusive():
        assert lock_file.is_file()


def test_exclusive_is_reentrant(lock_file: Path) -> None:
    lock = RootLock(lock_file)
    with lock.exclusive():
        with lock.exclusive():
            assert lock.mode == "exclusive"
        assert lock.mode == "exclusive"
    assert lock.mode is None


def test_shared_inside_exclusive_is_a_no_op(lock_file: Path) -> None:
    lock = RootLock(lock_file)
    with lock.exclusive():
        with lock.shared():
            assert lock.mode == "exclusive"
        assert lock.mode == "exclusive"


def test_shared_is_reentrant(lock_file: Path) -> None:
    lock = RootLock(lock_file)
    with lock.shared(), lock.shared():
        assert lock.mode == "shared"
    assert lock.mode is None


def test_upgrading_shared_to_exclusive_raises_and_leaves_the_lock_usable(lock_file: Path) -> None:
    lock = RootLock(lock_file)
    with lock.shared():
        with pytest.raises(RuntimeError, match="exclusive lock .* shared"):
            with lock.exclusive():
                pass
        assert lock.mode == "shared"
    assert lock.mode is None
    with lock.exclusive():
        assert lock.mode == "exclusive"


def test_two_lock_objects_on_one_file_share_state(lock_file: Path) -> None:
    first, second = RootLock(lock_file), RootLock(lock_file, timeout=0.5)
    with first.exclusive():
        with second.exclusive():  # would deadlock on flock if they used separate descriptors
            assert second.mode == "exclusive"


def test_the_lock_is_released_after_an_exception(lock_file: Path) -> None:
    lock = RootLock(lock_file)
    with pytest.raises(ValueError):
        with lock.exclusive():
            raise ValueError("boom")
    assert lock.mode is None
    with held_by_other_process(lock_file, "exclusive"):
        pass  # the other process could take it


def test_another_process_holding_it_exclusively_times_out_with_a_hint(lock_file: Path) -> None:
    lock = RootLock(lock_file, timeout=0.3)
    with held_by_other_process(lock_file, "exclusive"):
        started = time.monotonic()
        with pytest.raises(LockTimeoutError) as excinfo:
            with lock.exclusive():
                pass
        assert 0.25 <= time.monotonic() - started < 5
        with pytest.raises(LockTimeoutError):
            with lock.shared():
                pass
    error = excinfo.value
    assert "exclusive lock" in error.message and "another process" in error.message
    assert "MEMDIR_LOCK_TIMEOUT" in error.hint
    assert isinstance(error.__cause__, Exception)  # the portalocker error it translates
    with held_by_other_process(lock_file, "exclusive"):
        pass  # the requests given up on released the lock as soon as they got it
    with lock.exclusive():  # free again once the other process let go
        pass


def test_readers_share_writers_wait(lock_file: Path) -> None:
    lock = RootLock(lock_file, timeout=0.3)
    with held_by_other_process(lock_file, "shared"):
        with lock.shared():
            pass
        with pytest.raises(LockTimeoutError):
            with lock.exclusive():
                pass


_QUEUED = """
import sys
from memdir.storage.directory.locking import RootLock
print("asking", flush=True)
with RootLock(sys.argv[1], timeout=30).exclusive():
    with open(sys.argv[2], "a") as order:
        order.write(sys.argv[3] + "\\n")
"""


@pytest.mark.slow
def test_processes_waiting_for_the_lock_get_it_in_the_order_they_asked(lock_file: Path, tmp_path: Path) -> None:
    """Polling with sleeps served whoever retried right after a release; queued requests are served in turn."""
    order_file = tmp_path / "order.txt"
    waiters = []
    with held_by_other_process(lock_file, "exclusive"):
        for name in ("first", "second", "third", "fourth", "fifth"):
            waiter = subprocess.Popen(
                [sys.executable, "-c", _QUEUED, str(lock_file), str(order_file), name], stdout=subprocess.PIPE, text=True
            )
            assert waiter.stdout is not None and waiter.stdout.readline().strip() == "asking"
            time.sleep(0.3)  # its request is queued before the next process asks
            waiters.append(waiter)
    for waiter in waiters:
        assert waiter.wait(30) == 0
        waiter.stdout.close()
    assert order_file.read_text().split() == ["first", "second", "third", "fourth", "fifth"]


def test_another_thread_waits_then_gets_the_lock(lock_file: Path) -> None:
    lock = RootLock(lock_file, timeout=5)
    order: list[str] = []
    entered = threading.Event()

    def holder() -> None:
        with lock.exclusive():
            entered.set()
            time.sleep(0.2)
            order.append("holder done")

    thread = threading.Thread(target=holder)
    thread.start()
    entered.wait(5)
    with lock.exclusive():
        order.append("waiter in")
    thread.join()
    assert order == ["holder done", "waiter in"]


def test_another_thread_times_out(lock_file: Path) -> None:
    release = threading.Event()
    entered = threading.Event()

    def holder() -> None:
        with RootLock(lock_file).exclusive():
            entered.set()
            release.wait(5)

    thread = threading.Thread(target=holder)
    thread.start()
    entered.wait(5)
    try:
        with pytest.raises(LockTimeoutError, match="another thread"):
            with RootLock(lock_file, timeout=0.2).shared():
                pass
    finally:
        release.set()
        thread.join()


def test_mode_is_per_thread(lock_file: Path) -> None:
    lock = RootLock(lock_file)
    seen: list[object] = []
    with lock.exclusive():
        thread = threading.Thread(target=lambda: seen.append(lock.mode))
        thread.start()
        thread.join()
    assert seen == [None]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_does_not_inherit_the_parents_lock(lock_file: Path) -> None:
    lock = RootLock(lock_file, timeout=0.3)
    with lock.exclusive():
        pid = os.fork()
        if pid == 0:  # child: must not believe it holds the parent's lock
            code = 1
            try:
                with RootLock(lock_file, timeout=0.3).exclusive():
                    code = 2
            except LockTimeoutError:
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


class Repairs:
    """needs_repair/repair callbacks that record when they ran."""

    def __init__(self, lock_file: Path, broken: bool = True) -> None:
        self.lock_file = lock_file
        self.broken = broken
        self.calls = 0
        self.ran_exclusively: list[bool] = []

    def needs_repair(self) -> bool:
        return self.broken

    def repair(self) -> None:
        self.calls += 1
        self.broken = False
        # Nobody else may hold the lock while repairing, not even a reader.
        self.ran_exclusively.append(not other_process_can_read(self.lock_file))


_PROBE = """
import sys
from memdir.storage.directory.locking import RootLock
try:
    with RootLock(sys.argv[1], timeout=0.2).shared():
        print("got")
except Exception:
    print("blocked")
"""


def other_process_can_read(lock_file: Path) -> bool:
    probe = subprocess.run([sys.executable, "-c", _PROBE, str(lock_file)], capture_output=True, text=True, timeout=30)
    return probe.stdout.strip() == "got"


def make_lock(lock_file: Path, repairs: Repairs) -> RootLock:
    return RootLock(lock_file, needs_repair=repairs.needs_repair, repair=repairs.repair)


def test_exclusive_repairs_first(lock_file: Path) -> None:
    repairs = Repairs(lock_file)
    lock = make_lock(lock_file, repairs)
    with lock.exclusive():
        assert repairs.calls == 1 and repairs.ran_exclusively == [True]
        with lock.exclusive():
            pass
    with lock.exclusive():
        pass
    assert repairs.calls == 1  # nothing left to repair


def test_shared_steps_aside_to_repair_exclusively(lock_file: Path) -> None:
    repairs = Repairs(lock_file)
    lock = make_lock(lock_file, repairs)
    with lock.shared():
        assert lock.mode == "shared"
        assert repairs.calls == 1 and repairs.ran_exclusively == [True]


def test_no_repair_when_nothing_is_broken(lock_file: Path) -> None:
    repairs = Repairs(lock_file, broken=False)
    with make_lock(lock_file, repairs).shared():
        pass
    assert repairs.calls == 0


def test_a_failing_repair_releases_the_lock(lock_file: Path) -> None:
    def fail() -> None:
        raise OSError("disk on fire")

    lock = RootLock(lock_file, needs_repair=lambda: True, repair=fail)
    with pytest.raises(OSError, match="disk on fire"):
        with lock.exclusive():
            pass
    assert lock.mode is None
    with RootLock(lock_file, timeout=0.5).exclusive():
        pass


def descriptors_on(path: Path) -> int:
    """How many descriptors of this process are open on the file at ``path``."""
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        try:
            count += os.readlink(fd) == str(path)
        except OSError:  # (the descriptor listing the folder, closed meanwhile)
            pass
    return count


needs_proc = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")


@needs_proc
def test_the_lock_file_stays_open_between_holds_until_closed(lock_file: Path) -> None:
    lock = RootLock(lock_file, timeout=0.3)
    with lock.exclusive():
        pass
    with lock.shared():
        assert descriptors_on(lock_file) == 1  # the one kept from the hold before
    assert descriptors_on(lock_file) == 1
    with held_by_other_process(lock_file, "exclusive"):  # kept open, yet unlocked
        pass
    lock.close()
    assert descriptors_on(lock_file) == 0
    with lock.exclusive():  # opened again
        lock.close()  # while held: closed as the hold ends
        assert descriptors_on(lock_file) == 1 and lock.mode == "exclusive"
    assert descriptors_on(lock_file) == 0
    with held_by_other_process(lock_file, "exclusive"):
        pass


def test_a_lock_file_replaced_between_holds_is_locked_anew(lock_file: Path) -> None:
    lock = RootLock(lock_file, timeout=0.3)
    with lock.exclusive():
        pass
    lock_file.unlink()  # (a root deleted and made again, say): the kept descriptor is the old file's
    with held_by_other_process(lock_file, "exclusive"), pytest.raises(LockTimeoutError):
        with lock.exclusive():
            pass
    with lock.exclusive():
        assert lock_file.is_file()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_locks_with_its_own_descriptor(lock_file: Path) -> None:
    lock = RootLock(lock_file, timeout=0.3)
    with lock.exclusive():
        pass  # the parent keeps the file open: the child inherits that descriptor
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: takes the lock and holds it until the parent has tried
        code = 1
        try:
            with RootLock(lock_file, timeout=5).exclusive():
                os.write(write_end, b"x")
                time.sleep(1.0)
                code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    try:
        assert os.read(read_end, 1) == b"x"
        with pytest.raises(LockTimeoutError):  # one shared descriptor would let the parent in
            with lock.exclusive():
                pass
    finally:
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
