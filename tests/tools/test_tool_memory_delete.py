"""MemoryDelete: removes every file of the entry, refuses built-ins and missing entries."""

from __future__ import annotations

import pytest

from memdir.core.errors import EntryNotFoundError, ReadOnlyEntryError
from memdir.tools import memory_delete, memory_read


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
