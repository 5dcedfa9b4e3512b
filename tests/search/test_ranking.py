"""Ranking beyond the text: archived/superseded entries leave results, graph expansion, importance,
recency and a role's importance (fake embedder: deterministic, no model)."""

from __future__ import annotations

import dataclasses
import math
from datetime import UTC, datetime, timedelta

import pytest

from memdir.core.identity import Role
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.search.ranking import RoleImportance, graph_expansion, metadata_importance, recency
from memdir.storage.records import RankFacts
from memdir.tools.memory_search import memory_search
from tests.fakes import FakeEmbedder


def open_with(tmp_path, **settings) -> Memory:
    return Memory.open(Settings(root=tmp_path / "memory", **settings), embedder=FakeEmbedder())


def paths(results) -> list[str]:
    return [result.path for result in results]


# ------------------------------------------------------------------ archived and superseded

def test_archived_and_superseded_entries_leave_search_unless_asked_for(memory):
    memory.write("fact/old", "the deploy runs on jenkins", title="Old deploy",
                 metadata={"archived_at": "2026-01-01T00:00:00+00:00"})
    memory.write("fact/older", "the deploy runs on cron", title="Older deploy",
                 metadata={"superseded_by": "fact/new.md"})
    memory.write("fact/new", "the deploy runs on github actions", title="New deploy")
    assert paths(memory.search("deploy runs")) == ["fact/new.md"]
    assert set(paths(memory.search("deploy runs", include_archived=True))) == {"fact/old.md", "fact/older.md", "fact/new.md"}
    assert "fact/old.md" not in memory_search(memory, "deploy runs")
    assert "memory://fact/old.md" in memory_search(memory, "deploy runs", include_archived=True)
    assert memory.read("fact/old").content == "the deploy runs on jenkins"  # still readable
    entry = memory.read("fact/old")
    memory.write("fact/old", entry.content, title=entry.title,
                 metadata=entry.metadata.model_copy(update={"archived_at": None}))  # unarchived
    assert "fact/old.md" in paths(memory.search("deploy runs"))


# ------------------------------------------------------------------ graph expansion

def test_graph_expansion_brings_in_entries_linked_to_the_top_hits(tmp_path):
    with open_with(tmp_path, graph_weight=0.3) as memory:  # (other folders: no context coverage between them)
        memory.write("fact/q", "what colour is the sky", title="Question")
        memory.write("concept/a", "blue, mostly", title="Answer")
        memory.write("experience/noise", "entirely unrelated words here", title="Noise")
        assert "concept/a.md" not in paths(memory.search("sky colour"))
        memory.link("concept/a", "fact/q", "references", 0.8, origin="system")  # found from the hit's side
        results = memory.search("sky colour")
        assert paths(results)[:2] == ["fact/q.md", "concept/a.md"]
        assert results[1].breakdown.graph == pytest.approx(0.8)
        assert results[0].breakdown.graph == 0.0
        assert "experience/noise.md" not in paths(results)


def test_graph_expansion_respects_the_filters_and_hidden_entries(tmp_path):
    with open_with(tmp_path, graph_weight=0.3) as memory:
        memory.write("fact/q", "what colour is the sky", title="Question")
        memory.write("concept/a", "blue, mostly", title="Answer")
        memory.write("fact/b", "azure", title="Other", metadata={"archived_at": "2026-01-01T00:00:00Z"})
        memory.link("concept/a", "fact/q")
        memory.link("fact/b", "fact/q")
        assert paths(memory.search("sky colour", types=["fact"])) == ["fact/q.md"]
        assert paths(memory.search("sky colour")) == ["fact/q.md", "concept/a.md"]


def test_two_hops_decay_by_strength_and_hop_factor(memory):
    for name in "abcd":
        memory.write(f"fact/{name}", name, title=name)
    memory.link("fact/a", "fact/b", strength=0.5)
    memory.link("fact/c", "fact/b", strength=0.8)  # reached from b against its direction
    memory.link("fact/c", "fact/d", strength=1.0)
    found = graph_expansion(memory.index, [("fact/a.md", 0.6), ("fact/d.md", 0.3)], hops=2, hop_decay=0.5)
    assert found["fact/b.md"] == pytest.approx(0.5)  # a (1.0) * 0.5
    assert found["fact/c.md"] == pytest.approx(0.5)  # d (0.5) * 1.0, better than a→b→c: 1.0 * 0.5 * 0.8 * 0.5
    assert graph_expansion(memory.index, [("fact/a.md", 0.6)], hops=1, hop_decay=0.5) == {"fact/b.md": 0.5}


# ------------------------------------------------------------------ importance and recency

def test_importance_ranks_the_more_important_of_two_equal_matches_first(tmp_path):
    with open_with(tmp_path, importance_weight=0.2) as memory:
        memory.write("fact/a", "the release checklist", title="Checklist", metadata={"importance": 2})
        memory.write("fact/b", "the release checklist", title="Checklist", metadata={"importance": 9})
        memory.write("fact/c", "the release checklist", title="Checklist")  # 5 by default
        results = memory.search("release checklist")
        assert paths(results) == ["fact/b.md", "fact/c.md", "fact/a.md"]
        assert [r.breakdown.importance for r in results] == pytest.approx([8 / 9, 4 / 9, 1 / 9])
        assert results[0].breakdown.recency is not None


def test_without_weights_nothing_beyond_the_text_is_computed(memory):
    memory.write("fact/a", "the release checklist", title="Checklist", metadata={"importance": 9})
    [result] = memory.search("release checklist")
    assert (result.breakdown.graph, result.breakdown.importance, result.breakdown.recency) == (None, None, None)


def test_recency_prefers_the_entry_read_lately(tmp_path):
    old = datetime.now(UTC) - timedelta(days=60)
    with open_with(tmp_path, recency_weight=0.2, recency_half_life_days=30) as memory:
        memory.write("fact/a", "the release checklist", title="Checklist", updated_at=old)
        memory.write("fact/b", "the release checklist", title="Checklist", updated_at=old)
        first = {r.path: r.breakdown.recency for r in memory.search("release checklist")}
        assert first["fact/a.md"] == pytest.approx(0.25, abs=0.01)  # two half-lives
        memory.read("fact/b", count_hit=True)  # an agent read it just now
        results = memory.search("release checklist")
        assert paths(results) == ["fact/b.md", "fact/a.md"]
        assert results[0].breakdown.recency == pytest.approx(1.0, abs=0.01)


def test_a_role_ranks_with_its_own_importance(tmp_path):
    with open_with(tmp_path, agent="rita", role="reviewer") as memory:  # role_importance_weight on by default
        memory.write("fact/a", "the release checklist", title="Checklist", metadata={"importance": 6})
        memory.write("fact/b", "the release checklist", title="Checklist", metadata={"kind": "bug"})
        results = memory.search("release checklist")
        assert paths(results) == ["fact/b.md", "fact/a.md"]  # a reviewer's kind (bug) outweighs importance 6 over 5
        assert results[0].breakdown.importance > results[1].breakdown.importance
    with open_with(tmp_path) as memory:  # no role: importance is off by default, the order is the text's (ties by path)
        results = memory.search("release checklist")
        assert paths(results) == ["fact/a.md", "fact/b.md"] and results[0].breakdown.importance is None


def test_role_importance_follows_the_seed():
    now = datetime(2026, 6, 1, tzinfo=UTC)
    reviewer = RoleImportance.of(Settings(), Role.REVIEWER)
    assert reviewer.weights == (0.5, 0.1, 0.2, 0.2)
    assert RoleImportance.of(Settings(), None) is None
    fresh = RankFacts("fact/a.md", "fact", 10.0, 500, now.isoformat(), False, "bug")
    assert reviewer(fresh, now) == pytest.approx(0.5 + 0.1 + 0.2 + 0.2 * 0.8)  # reads clamp at 1, read just now: 1
    other = dataclasses.replace(fresh, kind="architecture")
    assert reviewer(other, now) == pytest.approx(0.5 + 0.1 + 0.2 + 0.2 * 0.3)  # lower, never 0
    unknown = RankFacts("fact/b.md", "fact", None, 0, (now - timedelta(days=30)).isoformat(), False)
    assert reviewer(unknown, now) == pytest.approx(0.5 * 0.5 + 0.2 * 0.5 + 0.2 * 0.3)  # importance 5, 30 days: 1/2
    assert 0.0 <= reviewer(dataclasses.replace(unknown, accessed_at=None), now) <= 1.0
    assert reviewer(unknown, now) == reviewer(unknown, now)  # deterministic
    with pytest.raises(ValueError, match="sum to 1"):
        Settings(role_weights_executor=(0.5, 0.5, 0.5, 0.5))


def test_explain_shows_the_signals_in_use(tmp_path):
    with open_with(tmp_path, graph_weight=0.1, importance_weight=0.1, recency_weight=0.1) as memory:
        memory.write("fact/a", "the release checklist", title="Checklist")
        assert "· graph 0.000 · importance 0.444 · recency 1.000 ·" in memory_search(memory, "release checklist", explain=True)


def test_signal_functions():
    now = datetime(2026, 6, 1, tzinfo=UTC)
    facts = RankFacts("fact/a.md", "fact", None, 0, (now - timedelta(days=10)).isoformat(), False)
    assert metadata_importance(facts, now) == pytest.approx(4 / 9)
    assert metadata_importance(dataclasses.replace(facts, importance=30.0), now) == 1.0  # held to 1-10
    assert recency(facts, now, 10) == pytest.approx(0.5)
    assert recency(RankFacts("x", None, None, 0, None, False), now, 10) == 0.0
    assert recency(facts, now, 1e9) == pytest.approx(1.0)
    assert math.isclose(recency(facts, now + timedelta(days=10), 10), 0.25)


def test_archived_entries_leave_discovery(memory):
    from memdir.tools.discovery import discover

    memory.write("fact/deploy", "We deploy the billing service with kubernetes every friday", title="Billing deploy",
                 metadata={"type": "fact", "tags": ["billing", "deploy"]})
    message = "how do we deploy the billing service with kubernetes?"
    assert "fact/deploy.md" in discover(memory, message)
    entry = memory.read("fact/deploy")
    memory.write("fact/deploy", entry.content, title=entry.title,
                 metadata=entry.metadata.model_copy(update={"archived_at": datetime(2026, 1, 1, tzinfo=UTC)}))
    assert "fact/deploy.md" not in discover(memory, message)


def test_an_episodes_importance_is_put_on_the_entries_scale():
    now = datetime(2026, 6, 1, tzinfo=UTC)
    episode = RankFacts("experience/episodes/2026-05/launch.md", "experience", 0.9, 0, now.isoformat(), False)
    entry = dataclasses.replace(episode, path="fact/launch.md", importance=0.9)
    assert metadata_importance(episode, now) == pytest.approx(0.9)  # 0-1 episode importance -> 1 + 9 x = 9.1
    assert metadata_importance(entry, now) == 0.0  # an entry's 0.9 is below the 1-10 scale: held to 1
