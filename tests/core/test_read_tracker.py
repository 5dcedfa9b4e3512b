"""The per-session read tracker: normalised keys, content digests, thread safety."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from memdir.core.entry import Entry
from memdir.core.errors import InvalidPathError, StaleEditError
from memdir.core.read_tracker import ReadRecord, ReadTracker, content_digest

WHEN = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def test_register_records_path_digest_and_time():
    tracker = ReadTracker()
    record = tracker.register("fact/api/limits.md", "100 requests/minute", WHEN)
    assert record == ReadRecord("fact/api/limits.md", content_digest("100 requests/minute"), WHEN)
    assert tracker.get("fact/api/limits.md") == record
    assert content_digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


@pytest.mark.parametrize(
    ("read_as", "asked_as"),
    [
        ("fact/x", "fact/x.md"),
        ("fact/x.md", "fact/x"),
        ("memory://fact/x.md", "fact/x"),
        ("fact//x", "memory://fact/x.md"),
    ],
)
def test_any_spelling_names_the_same_entry(read_as, asked_as):
    tracker = ReadTracker()
    tracker.register(read_as, "content")
    assert tracker.has_read(asked_as)
    assert tracker.paths() == ["fact/x.md"]


def test_unread_paths_are_unknown():
    tracker = ReadTracker()
    tracker.register("fact/x.md", "content")
    assert not tracker.has_read("fact/y.md")
    assert tracker.get("fact/y") is None
    assert not tracker.is_current("fact/y", "content")


def test_is_current_compares_content_digests():
    tracker = ReadTracker()
    tracker.register("fact/x", "old text", WHEN)
    assert tracker.is_current("fact/x.md", "old text")
    assert not tracker.is_current("fact/x.md", "new text")


def test_ensure_current_refuses_changed_content():
    tracker = ReadTracker()
    tracker.register("fact/x", "old text", WHEN)
    tracker.ensure_current("fact/x", Entry(path="fact/x.md", content="old text"))
    with pytest.raises(StaleEditError) as caught:
        tracker.ensure_current("fact/x", Entry(path="fact/x.md", content="changed by someone else"))
    assert str(caught.value) == (
        "memory://fact/x.md has changed since you last read it. Read it again with MemoryRead before editing."
    )


def test_register_entry_uses_its_path_content_and_time_or_an_alias():
    tracker = ReadTracker()
    entry = Entry(path="concept/new.md", content="merged text", updated_at=WHEN)
    tracker.register_entry(entry)
    tracker.register_entry(entry, as_path="concept/old")
    assert tracker.get("concept/new") == ReadRecord("concept/new.md", content_digest("merged text"), WHEN)
    assert tracker.get("concept/old") == ReadRecord("concept/old.md", content_digest("merged text"), WHEN)


def test_a_later_read_replaces_the_record():
    tracker = ReadTracker()
    tracker.register("fact/x", "first")
    tracker.register("fact/x.md", "second")
    assert len(tracker) == 1
    assert tracker.is_current("fact/x", "second")


def test_forget_and_clear():
    tracker = ReadTracker()
    tracker.register("fact/a", "a")
    tracker.register("fact/b", "b")
    tracker.forget("fact/a")
    tracker.forget("fact/never-read")
    assert tracker.paths() == ["fact/b.md"]
    tracker.clear()
    assert len(tracker) == 0


def test_invalid_paths_are_refused():
    with pytest.raises(InvalidPathError):
        ReadTracker().register("../secrets/key.md", "x")


def test_concurrent_registration_loses_nothing():
    tracker = ReadTracker()

    def work(worker: int) -> None:
        for n in range(200):
            tracker.register(f"fact/w{worker}/e{n}", f"{worker}-{n}")
            assert tracker.has_read(f"fact/w{worker}/e{n}.md")

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(tracker) == 8 * 200
