"""MemoryDelete: removes every file of the entry, refuses built-ins and missing entries."""

from __future__ import annotations

import numpy as np
import pytest

from memdir.core.errors import EntryNotFoundError, ReadOnlyEntryError
from memdir.tools.memory_delete import memory_delete
from memdir.tools.memory_read import memory_read


def test_deletes_every_file_and_forgets_the_read(memory, session):
    memory.write("experience/temp.md", "temporary lesson", title="Temp", metadata={"type": "experience"})
    memory_read(memory, session, "experience/temp.md")
    assert memory_delete(memory, session, "memory://experience/temp") == "Deleted memory://experience/temp.md"
    assert not memory.exists("experience/temp.md")
    assert not list(memory.root.glob("experience/temp.*"))
    assert "experience/temp.md" not in [info.path for info in memory.glob("**/*")]
    assert "experience/temp.md" not in [r.path for r in memory.search("temporary lesson")]
    assert not session.tracker.has_read("experience/temp.md")


def test_missing_entry(memory, session):
    with pytest.raises(EntryNotFoundError) as caught:
        memory_delete(memory, session, "fact/nope.md")
    assert caught.value.message == "memory://fact/nope.md not found."


def test_built_in_entry_is_refused(memory, session):
    with pytest.raises(ReadOnlyEntryError) as caught:
        memory_delete(memory, session, "skill/meta/deep-learning.md")
    assert str(caught.value) == (
        "memory://skill/meta/deep-learning.md is a built-in entry and cannot be changed. "
        "Write your own version under a different path."
    )
    assert memory.exists("skill/meta/deep-learning.md")


def test_links_to_the_deleted_entry_are_removed_from_other_entries(memory, session):
    from memdir.optimization.defragmenter import Defragmenter

    memory.write("fact/gone.md", "Soon deleted.", title="Gone")
    memory.write("fact/other.md", "Stays.", title="Other")
    memory.write("concept/a.md", "Links to both.", title="A",
                 metadata={"type": "concept", "related": ["memory://fact/gone.md", "fact/other.md"]}, hits=4)
    memory.write("concept/b.md", "Links by another spelling.", title="B", metadata={"related": ["fact/gone"]})
    before = memory.read("concept/a.md")
    text = memory_delete(memory, session, "fact/gone.md")
    assert text == (
        "Deleted memory://fact/gone.md\n"
        "Removed the related links to it from: memory://concept/a.md, memory://concept/b.md"
    )
    after = memory.read("concept/a.md")
    assert after.metadata.related == ["fact/other.md"]
    assert (after.content, after.updated_at, after.hits) == (before.content, before.updated_at, before.hits)
    assert memory.read("concept/b.md").metadata.related == []
    assert Defragmenter(memory).run("analyze").data["dangling_links"] == {}


def test_removing_a_link_keeps_the_linking_entrys_vector_without_a_model(tmp_path, session):
    from memdir.core.settings import Settings
    from memdir.memory import Memory
    from tests.fakes import FakeEmbedder

    settings = Settings(root=tmp_path / "m")
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        memory.write("fact/gone.md", "Soon deleted.", title="Gone")
        memory.write("concept/a.md", "Links to it.", title="A", metadata={"related": ["fact/gone.md"]})
        vector = memory.read("concept/a.md").embedding
    with Memory.open(settings, load_model=False) as memory:  # e.g. a server whose model is still loading
        memory_delete(memory, session, "fact/gone.md")
        kept = memory.read("concept/a.md")
        assert kept.metadata.related == [] and np.array_equal(kept.embedding, vector)
        assert memory.index.needs_embedding(FakeEmbedder.model_id) == []  # still current for its model
