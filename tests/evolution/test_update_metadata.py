"""`Memory.update_metadata` and `update_metadata_many`: what the evolution jobs change, and nothing else."""

from __future__ import annotations

import pytest

from memdir.core.errors import InputValidationError


@pytest.fixture
def store(memory):
    memory.write("concept/a.md", "Blue green deploys switch traffic between two colours.", title="Deploys",
                 metadata={"tags": ["deploy"]})
    memory.write("concept/b.md", "Canary releases send a little traffic first.", title="Canaries")
    return memory


def test_a_batch_changes_the_files_and_the_index_in_one_go_and_keeps_everything_else(store):
    before = {path: store.read(path) for path in ("concept/a.md", "concept/b.md")}
    links = [{"target": "concept/b.md", "kind": "extends", "strength": 0.5, "origin": "system"}]
    written = store.update_metadata_many({
        "concept/a.md": {"importance": 8.5, "links": links},
        "concept/b.md": {"archived_at": "2026-01-01T00:00:00+00:00"},
        "concept/gone.md": {"importance": 2},
    })
    assert sorted(entry.path for entry in written) == ["concept/a.md", "concept/b.md"]
    a, b = store.read("concept/a.md"), store.read("concept/b.md")
    assert a.metadata.importance == 8.5 and [link.target for link in a.metadata.links] == ["concept/b.md"]
    assert b.metadata.archived_at is not None
    for entry in (a, b):
        old = before[entry.path]
        assert (entry.content, entry.title, entry.hits, entry.updated_at, entry.metadata.tags) == (
            old.content, old.title, old.hits, old.updated_at, old.metadata.tags)
        assert (entry.embedding == old.embedding).all()
    facts = store.index.rank_facts(["concept/a.md", "concept/b.md"])
    assert (facts["concept/a.md"].importance, facts["concept/b.md"].hidden) == (8.5, True)
    assert [(edge.source, edge.target, edge.strength) for edge in store.index.edges(["concept/a.md"])] == [
        ("concept/a.md", "concept/b.md", 0.5)]
    assert store.search("blue green traffic colours")[0].path == "concept/a.md"  # its terms and vector still there
    assert not store.index.behind_files()


def test_a_batch_changes_only_what_evolution_changes(store):
    with pytest.raises(ValueError, match="changes only"):
        store.update_metadata_many({"concept/a.md": {"tags": ["other"]}})
    with pytest.raises(InputValidationError, match="cannot take"):
        store.update_metadata_many({"concept/a.md": {"links": [{"kind": "nonsense"}]}})
    assert store.read("concept/a.md").metadata.tags == ["deploy"]


def test_a_batch_can_decide_from_each_entry_as_it_is_read_and_leave_some_alone(store):
    yml = store.root / "concept/b.yml"  # the directory store's (the PostgreSQL store has none)
    untouched = (yml.stat().st_mtime_ns, yml.read_bytes()) if yml.exists() else None
    seen = []

    def decide(entry):
        seen.append(entry.path)
        return {"importance": 7.0} if entry.title == "Deploys" else None  # None: leave it as it is

    written = store.update_metadata_many({"concept/a.md": decide, "concept/b.md": decide})
    assert sorted(seen) == ["concept/a.md", "concept/b.md"] and [entry.path for entry in written] == ["concept/a.md"]
    assert store.read("concept/a.md").metadata.importance == 7.0
    assert ((yml.stat().st_mtime_ns, yml.read_bytes()) if yml.exists() else None) == untouched  # not rewritten
    assert [record.path for record in store.audit.records(path="concept/b.md") if record.action != "create"] == []
    with pytest.raises(ValueError, match="changes only"):
        store.update_metadata_many({"concept/a.md": lambda entry: {"title": "No"}})


def test_a_single_change_of_an_embedded_field_re_embeds(store):
    before = store.read("concept/a.md")
    after = store.update_metadata("concept/a.md", {"tags": ["release"], "importance": 3})
    assert after.metadata.tags == ["release"] and after.metadata.importance == 3
    assert after.content == before.content and not (store.read("concept/a.md").embedding == before.embedding).all()


@pytest.fixture(autouse=True)
def both_stores(store_kind):
    """Run against the directory store and PostgreSQL."""
    return store_kind
