"""MemoryEdit: SwarmMemory's checks in its order, literal matching, read tracking and stale edits."""

from __future__ import annotations

import pytest

from memdir.core.errors import EntryNotFoundError, InputValidationError, ReadOnlyEntryError, StaleEditError
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.tools.memory_edit import memory_edit
from memdir.tools.memory_read import memory_read
from memdir.tools.session import Session
from tests.fakes import FakeEmbedder

META = {
    "type": "fact",
    "confidence": "high",
    "tags": ["api"],
    "related": ["memory://fact/api/quotas.md"],
    "domain": "api",
}
NOT_READ = (
    "Cannot edit memory entry without reading it first. You must use MemoryRead on 'memory://fact/api/limits.md' "
    "before editing it. This ensures you have the current content to match against."
)


@pytest.fixture
def settings(tmp_path):
    return Settings(root=tmp_path / "memory")


@pytest.fixture
def memory(settings):
    store = Memory.open(settings, embedder=FakeEmbedder())
    store.write("fact/api/limits.md", "limit: 100 per minute\nburst: 100\n", title="API limits", metadata=META)
    yield store
    store.close()


def test_edit_without_reading_is_refused(memory, session):
    with pytest.raises(InputValidationError) as caught:
        memory_edit(memory, session, "fact/api/limits.md", "burst: 100", "burst: 50")
    assert str(caught.value) == NOT_READ


@pytest.mark.parametrize(
    ("read_as", "edit_as"), [("fact/api/limits", "fact/api/limits.md"), ("fact/api/limits.md", "fact/api/limits")]
)
def test_x_and_x_md_are_the_same_entry(memory, session, read_as, edit_as):
    memory_read(memory, session, read_as)
    assert memory_edit(memory, session, edit_as, "burst: 100", "burst: 50") == (
        "Successfully replaced 1 occurrence(s) in memory://fact/api/limits.md"
    )
    assert memory.read("fact/api/limits.md").content == "limit: 100 per minute\nburst: 50\n"


def test_not_read_comes_before_every_other_check(memory, session):
    with pytest.raises(InputValidationError) as caught:
        memory_edit(memory, session, "fact/api/limits.md", "same", "same")
    assert str(caught.value) == NOT_READ


def test_an_entry_that_does_not_exist_is_not_found_rather_than_unread(memory, session):
    with pytest.raises(EntryNotFoundError) as caught:
        memory_edit(memory, session, "fact/api/nothing.md", "a", "b")
    assert caught.value.message == "memory://fact/api/nothing.md not found."


def test_identical_strings_are_refused(memory, session):
    memory_read(memory, session, "fact/api/limits.md")
    with pytest.raises(InputValidationError) as caught:
        memory_edit(memory, session, "fact/api/limits.md", "burst", "burst")
    assert str(caught.value) == "old_string and new_string must be different. They are currently identical."


def test_empty_old_string_is_refused(memory, session):
    memory_read(memory, session, "fact/api/limits.md")
    with pytest.raises(InputValidationError) as caught:
        memory_edit(memory, session, "fact/api/limits.md", "", "x")
    assert str(caught.value) == "old_string is required. Pass the exact text to replace."


def test_entry_deleted_after_reading(memory, session):
    memory_read(memory, session, "fact/api/limits.md")
    memory.delete("fact/api/limits.md")
    with pytest.raises(EntryNotFoundError) as caught:
        memory_edit(memory, session, "fact/api/limits.md", "burst", "peak")
    assert caught.value.message == "memory://fact/api/limits.md not found."


def test_old_string_not_found(memory, session):
    memory_read(memory, session, "fact/api/limits.md")
    with pytest.raises(InputValidationError) as caught:
        memory_edit(memory, session, "fact/api/limits.md", "limit: 200", "limit: 300")
    assert str(caught.value) == (
        "old_string not found in memory entry. Make sure it matches exactly, including all whitespace and indentation."
    )


def test_multiple_occurrences_need_replace_all(memory, session):
    memory_read(memory, session, "fact/api/limits.md")
    with pytest.raises(InputValidationError) as caught:
        memory_edit(memory, session, "fact/api/limits.md", "100", "200")
    assert str(caught.value) == (
        "Found 2 occurrences of old_string. Either provide more surrounding context to make the match unique, "
        "or use replace_all: true to replace all occurrences."
    )
    assert memory.read("fact/api/limits.md").content == "limit: 100 per minute\nburst: 100\n"


def test_replace_all(memory, session):
    memory_read(memory, session, "fact/api/limits.md")
    assert memory_edit(memory, session, "fact/api/limits.md", "100", "200", replace_all=True) == (
        "Successfully replaced 2 occurrence(s) in memory://fact/api/limits.md"
    )
    assert memory.read("fact/api/limits.md").content == "limit: 200 per minute\nburst: 200\n"


def test_matching_is_literal_not_regex(memory, session):
    memory.write("fact/re.md", "a.b axb (x)+", title="Regex", metadata={"type": "fact"})
    memory_read(memory, session, "fact/re.md")
    memory_edit(memory, session, "fact/re.md", "a.b", "A")
    memory_edit(memory, session, "fact/re.md", "(x)+", "$1")
    assert memory.read("fact/re.md").content == "A axb $1"


def test_keeps_title_and_metadata_and_re_embeds(memory, session):
    before = memory.read("fact/api/limits.md")
    memory_read(memory, session, "fact/api/limits.md")
    memory_edit(memory, session, "fact/api/limits.md", "limit: 100 per minute", "limit: 250 per hour")
    after = memory.read("fact/api/limits.md")
    assert after.title == "API limits"
    assert after.metadata == before.metadata
    assert after.embedding is not None
    assert (after.embedding != before.embedding).any()  # the summary changed, so did the vector
    assert [r.path for r in memory.search("250 per hour", top_k=1)] == ["fact/api/limits.md"]


def test_edit_after_another_process_changed_the_entry_is_stale(memory, session, settings):
    memory_read(memory, session, "fact/api/limits.md")
    with Memory.open(settings, embedder=FakeEmbedder()) as other:
        other.write("fact/api/limits.md", "limit: 100 per minute\nburst: 10\n", title="API limits", metadata=META)
    with pytest.raises(StaleEditError) as caught:
        memory_edit(memory, session, "fact/api/limits.md", "burst: 100", "burst: 50")
    assert str(caught.value) == (
        "memory://fact/api/limits.md has changed since you last read it. Read it again with MemoryRead before editing."
    )
    assert memory.read("fact/api/limits.md").content == "limit: 100 per minute\nburst: 10\n"
    memory_read(memory, session, "fact/api/limits.md")  # reading again makes the edit possible
    memory_edit(memory, session, "fact/api/limits.md", "burst: 10", "burst: 50")
    assert memory.read("fact/api/limits.md").content == "limit: 100 per minute\nburst: 50\n"


def test_another_sessions_edit_makes_this_sessions_read_stale(memory):
    alice, bob = Session(), Session()
    memory_read(memory, alice, "fact/api/limits.md")
    memory_read(memory, bob, "fact/api/limits.md")
    memory_edit(memory, alice, "fact/api/limits.md", "burst: 100", "burst: 50")
    with pytest.raises(StaleEditError):
        memory_edit(memory, bob, "fact/api/limits.md", "limit: 100", "limit: 5")


def test_own_edits_do_not_need_a_new_read(memory, session):
    memory_read(memory, session, "fact/api/limits.md")
    memory_edit(memory, session, "fact/api/limits.md", "burst: 100", "burst: 50")
    memory_edit(memory, session, "fact/api/limits.md", "burst: 50", "burst: 25")
    assert memory.read("fact/api/limits.md").content == "limit: 100 per minute\nburst: 25\n"


def test_editing_through_a_stub_edits_the_target(memory, session):
    memory.write("fact/api/old.md", "old", title="Old", metadata={"type": "fact"})
    memory.write_stub("fact/api/old.md", "fact/api/limits.md", "merged")
    memory_read(memory, session, "fact/api/old.md")
    assert memory_edit(memory, session, "fact/api/old.md", "burst: 100", "burst: 1") == (
        "Successfully replaced 1 occurrence(s) in memory://fact/api/limits.md"
    )
    assert memory.read("fact/api/limits.md").content.endswith("burst: 1\n")
    assert memory.redirect_of("fact/api/old.md") is not None  # the stub stays a stub


def test_built_in_entries_are_read_only(memory, session):
    memory_read(memory, session, "skill/meta/deep-learning.md")
    with pytest.raises(ReadOnlyEntryError):
        memory_edit(memory, session, "skill/meta/deep-learning.md", "Deep Learning Protocol", "Shallow")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [("limit: 100 per minute", "word " * 260, "Content exceeds 250-word limit"), ("limit: 100 per minute\nburst: 100\n", "   ", "content is empty")],
)
def test_an_edit_keeps_the_rules_a_write_has(memory, session, old, new, message):
    memory_read(memory, session, "fact/api/limits.md")
    with pytest.raises(InputValidationError, match=message):
        memory_edit(memory, session, "fact/api/limits.md", old, new)
    assert memory.read("fact/api/limits.md").content == "limit: 100 per minute\nburst: 100\n"


def test_an_entry_already_over_the_limit_can_be_edited_without_adding_words(memory, session):
    long = "start " + "word " * 300
    memory.write("fact/api/long.md", long, title="Long", metadata=META)  # as written by hand, or before the limit
    memory_read(memory, session, "fact/api/long.md")
    assert memory_edit(memory, session, "fact/api/long.md", "start", "begin").startswith("Successfully")
    with pytest.raises(InputValidationError, match="Content exceeds 250-word limit"):
        memory_edit(memory, session, "fact/api/long.md", "begin", "begin here")
