"""`Memory.write_many`: a bulk write is one model call and one change of files, index and audit."""

from __future__ import annotations

import pytest

from memdir.core.entry import Metadata
from memdir.core.errors import EntryTooLargeError, InputValidationError, NotOwnerError
from memdir.core.settings import Settings
from memdir.memory import Memory, NewEntry
from memdir.storage.base import committed
from memdir.storage.directory import filesystem
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.usefixtures("store_kind")  # the directory store, then PostgreSQL

NOTES = [
    NewEntry(f"fact/bulk/note{i}", f"The deploy of service {i} needs the {word} flag.", f"Note {i}",
             {"type": "fact", "tags": ["bulk"]})
    for i, word in enumerate(["canary", "rollback", "blue-green", "shadow"])
]


@pytest.fixture
def bulk(tmp_path):
    embedder = FakeEmbedder()
    with Memory.open(Settings(root=tmp_path / "memory", max_entry_size=400), embedder=embedder) as memory:
        memory.embedder = embedder  # the test reads its call count
        yield memory


def test_a_batch_is_embedded_in_one_call_indexed_audited_and_read_back(bulk):
    bulk.write("fact/bulk/note0", "An older version.", title="Old")
    calls = bulk.embedder.calls

    results = bulk.write_many(NOTES)

    assert bulk.embedder.calls == calls + 1
    assert [(r.entry.path, r.overwritten) for r in results] == [("fact/bulk/note0.md", True)] + [
        (f"fact/bulk/note{i}.md", False) for i in range(1, 4)
    ]
    for note in NOTES:
        entry = bulk.read(note.path)
        assert (entry.content, entry.title, entry.metadata.tags) == (note.content, note.title, ["bulk"])
        assert entry.embedding is not None
    assert bulk.search("rollback flag", top_k=1)[0].path == "fact/bulk/note1.md"
    actions = [(r.action, r.path) for r in bulk.audit.records() if r.path.startswith("fact/bulk/")]
    assert actions == [("create", "fact/bulk/note0.md"), ("update", "fact/bulk/note0.md")] + [
        ("create", f"fact/bulk/note{i}.md") for i in range(1, 4)
    ]


def test_the_files_of_a_batch_are_committed_as_one_transaction(bulk, store_kind, monkeypatch):
    if store_kind != "directory":
        pytest.skip("PostgreSQL commits a batch in the one transaction its lock holds")
    commits = []
    real = filesystem.file_transaction
    monkeypatch.setattr(filesystem, "file_transaction", lambda *a, **k: (commits.append(len(a[1])), real(*a, **k))[1])

    bulk.write_many(NOTES)

    assert len(commits) == 1, "one journal for the batch, not one per entry"
    assert commits[0] >= 3 * len(NOTES)  # .md, .yml and .emb of each


def test_a_batch_with_one_bad_entry_writes_nothing(bulk):
    with pytest.raises(EntryTooLargeError):
        bulk.write_many([*NOTES, NewEntry("fact/bulk/huge", "word " * 200, "Too large")])

    assert [bulk.exists(note.path) for note in NOTES] == [False] * len(NOTES)
    assert bulk.search("deploy flag") == []
    assert not [r for r in bulk.audit.records() if r.path.startswith("fact/bulk/")]


def test_a_path_written_twice_in_a_batch_keeps_its_later_version(bulk):
    results = bulk.write_many([*NOTES, NewEntry("fact/bulk/note1", "The deploy of service 1 is frozen.", "Frozen")])

    assert [(r.entry.path, r.overwritten) for r in results[-2:]] == [("fact/bulk/note3.md", False), ("fact/bulk/note1.md", True)]
    assert (bulk.read("fact/bulk/note1").content, bulk.read("fact/bulk/note1").title) == ("The deploy of service 1 is frozen.", "Frozen")
    assert bulk.search("frozen", top_k=1)[0].path == "fact/bulk/note1.md"
    assert [r.action for r in bulk.audit.records(path="fact/bulk/note1.md")] == ["create", "update"]


def test_the_store_refuses_a_path_twice_in_one_transaction(bulk):
    from memdir.storage.base import EntryWrite

    note = EntryWrite("fact/bulk/x.md", "x", "X", Metadata())
    with pytest.raises(InputValidationError, match="twice"):
        committed(bulk.adapter.write_many([note, note]))
    assert not bulk.exists("fact/bulk/x")


def test_a_batch_touching_another_agents_entry_writes_nothing(open_as):
    alice, bob = open_as("alice"), open_as("bob")
    alice.write("fact/bulk/note2", "Alice's note.", title="Hers")

    with pytest.raises(NotOwnerError):
        bob.write_many(NOTES)

    assert [bob.exists(note.path) for note in NOTES] == [False, False, True, False]
    assert alice.read("fact/bulk/note2").content == "Alice's note."
