"""Several processes on one root: no lost writes, no torn entries, even under SIGKILL."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from memdir.core.entry import Entry
from memdir.storage.base import committed
from memdir.storage.directory import atomic
from memdir.storage.directory.filesystem import FilesystemAdapter
from memdir.storage.sidecar import embedding_checksum

pytestmark = pytest.mark.slow

SPAWN = multiprocessing.get_context("spawn")
SHARED = "fact/shared.md"


def version_content(version: int, size: int) -> str:
    return f"version {version}\n" + "v" * size


def write_version(adapter: FilesystemAdapter, path: str, version: int, size: int = 200) -> None:
    """An entry whose .md, .yml and .emb all name ``version``."""
    committed(adapter.write(
        path,
        version_content(version, size),
        title=f"v{version}",
        metadata={"source": f"version-{version}", "tags": ["concurrency"]},
        embedding=np.full(384, version, dtype=np.float32),
    ))


def check_entry(entry: Entry) -> int:
    """The entry's version, after asserting that its content, metadata and vector agree on it."""
    version = int(entry.content.split("\n", 1)[0].removeprefix("version "))
    assert entry.title == f"v{version}"
    assert entry.metadata.source == f"version-{version}"
    assert entry.embedding is not None, "the .emb does not match the .yml checksum"
    assert np.all(entry.embedding == version)
    return version


def check_consistent(root: Path, entry: Entry) -> int:
    """The entry's version, after asserting all three files agree on it."""
    version = check_entry(entry)
    stem = root / entry.path[: -len(".md")]
    sidecar = yaml.safe_load(stem.with_suffix(".yml").read_text(encoding="utf-8"))
    assert sidecar["size"] == len(stem.with_suffix(".md").read_bytes())
    assert sidecar["embedding_checksum"] == embedding_checksum(stem.with_suffix(".emb").read_bytes())
    return version


# --------------------------------------------------------------------------- child processes


def many_writes(root: str, worker: int, count: int) -> None:
    adapter = FilesystemAdapter(root, lock_timeout=60)
    for i in range(count):
        write_version(adapter, f"fact/w{worker}/e{i}", worker * 1000 + i)


def overwrite_shared(root: str, worker: int, count: int) -> None:
    adapter = FilesystemAdapter(root, lock_timeout=60)
    for i in range(count):
        write_version(adapter, SHARED, worker * 1000 + i, size=20_000)


def read_under_shared_lock(adapter: FilesystemAdapter) -> None:
    """The raw files are checked under the same shared lock as the read, as any reader
    of the directory holding the lock would see them."""
    with adapter.lock.shared():
        if adapter.exists(SHARED):
            check_consistent(Path(adapter.root), adapter.read_entry(SHARED))


def read_without_lock(adapter: FilesystemAdapter) -> None:
    """The adapter's lock-free reads: the listing and the entry (raw files read outside the
    lock may be mid-change, which is why the adapter checks)."""
    if [info.path for info in adapter.iter_entries()] == [SHARED]:
        check_entry(adapter.read_entry(SHARED))


def read_until(root: str, read_once, stop, bad, reads) -> None:
    """Read the shared entry with ``read_once`` until ``stop`` is set; count torn reads in ``bad``."""
    adapter = FilesystemAdapter(root, lock_timeout=60)
    while not stop.is_set():
        try:
            read_once(adapter)
        except Exception as exc:  # noqa: BLE001 — any failure here is a torn read
            print(f"torn read: {exc!r}", file=sys.stderr)
            with bad.get_lock():
                bad.value += 1
        with reads.get_lock():
            reads.value += 1


def write_forever(root: str, first_version: int, started) -> None:
    adapter = FilesystemAdapter(root, lock_timeout=60)
    version = first_version
    while True:
        write_version(adapter, SHARED, version, size=2_000_000)
        started.set()
        version += 1


def run_all(processes: list, timeout: float = 60) -> None:
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout)
        assert process.exitcode == 0, f"{process.name} failed with exit code {process.exitcode}"


# --------------------------------------------------------------------------- tests


def test_parallel_writers_lose_nothing(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    run_all([SPAWN.Process(target=many_writes, args=(str(root), w, 50)) for w in range(5)])
    adapter = FilesystemAdapter(root)
    rows = list(adapter.iter_entries())
    assert len(rows) == 250
    versions = {check_consistent(adapter.root, adapter.read_entry(row.path)) for row in rows}
    assert versions == {w * 1000 + i for w in range(5) for i in range(50)}
    assert adapter.total_size() == sum(row.size for row in rows)
    assert list(atomic.txn_dir(adapter.root).iterdir()) == []
    assert list(adapter.root.rglob("*.tmp")) == []


@pytest.mark.parametrize("read_once", [read_under_shared_lock, read_without_lock], ids=["shared lock", "lock-free"])
def test_concurrent_overwrites_of_one_path_leave_one_complete_version(tmp_path: Path, read_once) -> None:
    root = tmp_path / "memory"
    FilesystemAdapter(root)
    stop, bad, reads = SPAWN.Event(), SPAWN.Value("i", 0), SPAWN.Value("i", 0)
    reader = SPAWN.Process(target=read_until, args=(str(root), read_once, stop, bad, reads))
    reader.start()
    try:
        run_all([SPAWN.Process(target=overwrite_shared, args=(str(root), w, 25)) for w in range(4)])
    finally:
        stop.set()
        reader.join(30)
    assert reader.exitcode == 0
    assert bad.value == 0, f"{bad.value} of {reads.value} reads saw a mixture of versions"
    assert reads.value > 0
    print(f"{reads.value} consistent reads during the overwrites")
    adapter = FilesystemAdapter(root)
    version = check_consistent(adapter.root, adapter.read_entry(SHARED))
    assert version % 1000 == 24  # the last write of whichever worker finished last
    assert [row.path for row in adapter.iter_entries()] == [SHARED]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_sigkill_at_any_moment_leaves_old_or_new_never_a_mixture(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    FilesystemAdapter(root)
    rng = random.Random(20250115)
    interrupted = 0
    last_version = 0
    for round_number in range(8):
        started = SPAWN.Event()
        first_version = (round_number + 1) * 1000
        child = SPAWN.Process(target=write_forever, args=(str(root), first_version, started))
        child.start()
        assert started.wait(30), "the writer never completed a first write"
        time.sleep(rng.uniform(0.0, 0.4))
        os.kill(child.pid, signal.SIGKILL)
        child.join(10)
        assert child.exitcode == -signal.SIGKILL
        interrupted += bool(os.listdir(atomic.txn_dir(root))) or bool(list(root.rglob("*.tmp")))
        adapter = FilesystemAdapter(root)  # recovers whatever the kill left
        version = check_consistent(adapter.root, adapter.read_entry(SHARED))
        assert first_version <= version and version > last_version
        last_version = version
        assert list(atomic.txn_dir(root).iterdir()) == []
        assert list(root.rglob("*.tmp")) == []
        assert sorted(p.name for p in (root / "fact").iterdir()) == ["shared.emb", "shared.md", "shared.yml"]
    print(f"{interrupted} of 8 kills interrupted a transaction")
