"""The defrag journal and `undo_last`: every live run can be reverted exactly; nothing is lost by accident."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memdir.core.errors import InputValidationError
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.optimization.defragmenter import Defragmenter
from memdir.optimization.journal import journal_dir, list_runs, undo_last
from tests.fakes import FakeEmbedder

LATER = datetime.now(UTC) + timedelta(days=45)


@pytest.fixture
def memory(tmp_path):
    store = Memory.open(Settings(root=tmp_path / "memory"), embedder=FakeEmbedder())
    text = "Ruby classes bundle state and behaviour: a class defines methods and instance variables for its objects."
    store.write("concept/ruby/classes.md", text, title="Ruby classes",
                metadata={"type": "concept", "confidence": "high", "tags": ["ruby"], "domain": "programming"})
    store.write("concept/ruby/classes-notes.md", text + " Also modules.", title="Class notes",
                metadata={"type": "concept", "tags": ["classes"], "source": "notes"})
    store.write("fact/http/retry.md", "Retry failed HTTP requests with exponential backoff and jitter so clients do not stampede the server.",
                title="HTTP retries", metadata={"type": "fact", "tags": ["http"]})
    store.write("fact/http/timeouts.md", "Give every HTTP request a timeout; retry failed requests with exponential backoff.",
                title="HTTP timeouts", metadata={"type": "fact", "tags": ["http"]})
    store.write("experience/scratch.md", "Scratch notes nobody needs.", title="Scratch")
    store.write("experience/other-scratch.md", "More throwaway scribbles, unread.", title="Other scratch")
    store.read("concept/ruby/classes.md", count_hit=True)
    store.read("concept/ruby/classes.md", count_hit=True)
    yield store
    store.close()


def state(memory) -> dict:
    """Everything a user could observe about every entry and stub."""
    found = {}
    for info in memory.list(include_virtual=False):
        entry = memory.read(info.path)
        found[info.path] = (entry.content, entry.title, entry.metadata.to_yaml_dict(), entry.hits,
                            None if entry.embedding is None else entry.embedding.tobytes())
    for info in memory.list_stubs():
        found[info.path] = ("stub", memory.redirect_of(info.path))
    return found


@pytest.mark.parametrize(
    ("action", "options"),
    [
        ("link_related", {}),
        ("merge_duplicates", {"merge_strategy": "keep_newer"}),
        ("merge_duplicates", {"merge_strategy": "keep_larger"}),
        ("merge_duplicates", {"merge_strategy": "combine"}),
        ("compact", {}),
        ("full", {"merge_strategy": "combine"}),
    ],
)
def test_undo_restores_exactly_what_a_live_run_changed(memory, action, options):
    before = state(memory)
    report = Defragmenter(memory, now=LATER).run(action, dry_run=False, **options)
    assert report.journal, report.markdown
    assert state(memory) != before
    result = undo_last(memory)
    assert result.run_id == report.journal and result.action == action
    assert state(memory) == before
    assert memory.read("concept/ruby/classes.md").hits == 2


def test_undo_cleanup_brings_stubs_back_and_they_redirect_again(memory):
    Defragmenter(memory).run("merge_duplicates", dry_run=False)
    merged = state(memory)
    Defragmenter(memory, now=LATER).run("cleanup_stubs", dry_run=False)
    assert memory.list_stubs() == []
    undo_last(memory)
    assert state(memory) == merged
    assert memory.read("concept/ruby/classes.md").path == "concept/ruby/classes-notes.md"


def test_undo_runs_in_reverse_order_like_a_stack(memory):
    original = state(memory)
    Defragmenter(memory).run("merge_duplicates", dry_run=False)
    merged = state(memory)
    Defragmenter(memory, now=LATER).run("compact", dry_run=False)
    undo_last(memory)
    assert state(memory) == merged
    undo_last(memory)
    assert state(memory) == original
    with pytest.raises(InputValidationError, match="no live defrag run to undo"):
        undo_last(memory)


def test_dry_runs_and_read_only_actions_write_no_journal(memory):
    defrag = Defragmenter(memory, now=LATER)
    for action in ("analyze", "find_duplicates", "link_related", "merge_duplicates", "cleanup_stubs", "compact", "full"):
        defrag.run(action)
    assert list_runs(memory) == []
    assert not journal_dir(memory.root).exists()


def test_journal_records_full_prior_state(memory):
    report = Defragmenter(memory, now=LATER).run("compact", dry_run=False)
    files = list(journal_dir(memory.root).glob("*.jsonl"))
    assert [file.stem for file in files] == [report.journal]
    records = [json.loads(line) for line in files[0].read_text().splitlines()]
    assert records[0]["type"] == "run" and records[0]["action"] == "compact"
    before = {r["path"]: r["state"] for r in records if r["type"] == "before"}
    assert set(before) == {"experience/scratch.md", "experience/other-scratch.md"}
    scratch = before["experience/scratch.md"]
    assert scratch["state"] == "entry" and scratch["content"] == "Scratch notes nobody needs."
    assert scratch["title"] == "Scratch" and scratch["hits"] == 0 and scratch["embedding"]
    assert records[-1] == {"type": "end", "status": "complete", "finished_at": records[-1]["finished_at"]}


def test_undo_refuses_to_overwrite_later_changes_unless_forced(memory):
    report = Defragmenter(memory).run("merge_duplicates", merge_strategy="combine", dry_run=False)
    kept = report.data["merges"][0]["keep"]  # the entry the merge rewrote
    entry = memory.read(kept)
    memory.write(kept, entry.content + "\n\nA later edit.", title=entry.title, metadata=entry.metadata)
    with pytest.raises(InputValidationError) as caught:
        undo_last(memory)
    assert "changed after it" in caught.value.message and "--force" in caught.value.hint
    assert "A later edit." in memory.read(kept).content  # nothing was touched
    result = undo_last(memory, force=True)
    assert result.conflicts == [kept]
    assert "A later edit." not in memory.read(kept).content


def test_an_interrupted_run_can_still_be_undone(memory, monkeypatch):
    original = state(memory)
    real_delete = memory.delete
    calls = []

    def failing_delete(path):
        calls.append(path)
        if len(calls) == 2:
            raise KeyboardInterrupt  # killed halfway through the run
        return real_delete(path)

    monkeypatch.setattr(memory, "delete", failing_delete)
    with pytest.raises(KeyboardInterrupt):
        Defragmenter(memory, now=LATER).run("compact", dry_run=False)
    monkeypatch.setattr(memory, "delete", real_delete)
    run = list_runs(memory)[-1]
    assert run.status == "failed" and len(run.before) == 2
    undo_last(memory)
    assert state(memory) == original


def test_undo_restores_the_recorded_vector_without_a_model(memory):
    vector = memory.read("experience/scratch.md").embedding
    Defragmenter(memory, now=LATER).run("compact", dry_run=False)
    offline = Memory.open(Settings(root=memory.root, embeddings_enabled=False))
    try:
        undo_last(offline)
        restored = offline.read("experience/scratch.md")
        assert restored.content == "Scratch notes nobody needs."
        assert np.array_equal(restored.embedding, vector)
    finally:
        offline.close()


def test_reads_after_the_run_are_kept_by_the_undo(memory):
    report = Defragmenter(memory).run("merge_duplicates", merge_strategy="combine", dry_run=False)
    kept = report.data["merges"][0]["keep"]
    hits_before = memory.read(kept).hits
    for _ in range(3):
        memory.read(kept, count_hit=True)
    undo_last(memory)
    assert memory.read(kept).hits == hits_before + 3
    assert memory.read("concept/ruby/classes.md").hits == 2
