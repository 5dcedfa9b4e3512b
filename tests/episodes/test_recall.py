"""Recall ranking (importance boost, recency decay, at most N) and the session-start reminder."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memdir.core.settings import Settings
from memdir.episodes.model import Episode, Message
from memdir.episodes.recall import (
    adjusted_score,
    rank,
    rank_episodes,
    recency_factor,
    where_we_left_off,
)
from memdir.episodes.store import StoredEpisode, save
from memdir.memory import Memory
from tests.fakes import FakeEmbedder

NOW = datetime(2025, 6, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def settings(tmp_path):
    return Settings(root=tmp_path / "memory")


@pytest.fixture
def memory(settings):
    store = Memory.open(settings, embedder=FakeEmbedder())
    yield store
    store.close()


def stored(name, *, days_ago=0.0, importance=0.3, project=None, tags=()):
    when = NOW - timedelta(days=days_ago)
    return StoredEpisode(path=f"experience/episodes/{name}.md", name=name, outcome="success", importance=importance,
                         started=when, ended=when, tokens=10, tags=list(tags), project=project, summary=f"About {name}.")


# ---------------------------------------------------------------- the rules
def test_recency_factor_halves_above_the_floor_every_half_life():
    assert recency_factor(0, 30, 0.5) == 1.0
    assert recency_factor(30, 30, 0.5) == pytest.approx(0.75)
    assert recency_factor(60, 30, 0.0) == pytest.approx(0.25)
    assert recency_factor(10_000, 30, 0.5) == pytest.approx(0.5)
    assert recency_factor(365, 0, 0.5) == 1.0  # half-life 0: no decay


def test_importance_at_the_threshold_gets_the_boost(settings):
    assert adjusted_score(0.5, 0.7, 0, settings) == (pytest.approx(0.6), True)
    assert adjusted_score(0.5, 0.69, 0, settings) == (pytest.approx(0.5), False)


def test_older_episodes_need_more_relevance(settings):
    fresh, old = stored("fresh", days_ago=1), stored("old", days_ago=90)
    ranked = rank([(old, 0.6), (fresh, 0.6)], settings, now=NOW)
    assert [item.episode.name for item in ranked] == ["fresh", "old"]
    assert ranked[1].score < ranked[0].score
    # 90 days at half-life 30 and floor 0.5: 0.5625 of its relevance, so 0.6 no longer passes 0.4
    assert [item.episode.name for item in rank([(old, 0.6), (fresh, 0.6)], settings, now=NOW, threshold=0.4)] == ["fresh"]
    assert rank([(old, 0.8)], settings, now=NOW, threshold=0.4)[0].episode.name == "old"


def test_boost_lifts_an_important_episode_over_a_slightly_more_relevant_one(settings):
    plain, important = stored("plain"), stored("important", importance=0.9)
    ranked = rank([(plain, 0.55), (important, 0.5)], settings, now=NOW)
    assert [item.episode.name for item in ranked] == ["important", "plain"]
    assert ranked[0].boosted and not ranked[1].boosted


def test_the_boost_reorders_what_passes_but_lets_nothing_in(settings):
    relevant, unrelated = stored("relevant", importance=0.2), stored("unrelated", importance=0.75)
    # 0.163 + the 0.1 boost would clear a 0.25 threshold; its relevance does not
    ranked = rank([(unrelated, 0.163), (relevant, 0.3)], settings, now=NOW, threshold=0.25)
    assert [item.episode.name for item in ranked] == ["relevant"]


def test_at_most_n_are_injected(tmp_path):
    settings = Settings(root=tmp_path, episode_max_injected=2)
    candidates = [(stored(f"e{n}"), 0.9 - n / 100) for n in range(5)]
    assert [item.episode.name for item in rank(candidates, settings, now=NOW)] == ["e0", "e1"]


def test_decay_and_boost_are_configurable(tmp_path):
    settings = Settings(root=tmp_path, episode_half_life_days=0, episode_importance_boost=0.0)
    old_important, fresh = stored("old", days_ago=400, importance=1.0), stored("fresh")
    ranked = rank([(old_important, 0.5), (fresh, 0.5)], settings, now=NOW)
    assert [item.score for item in ranked] == [0.5, 0.5]


# ---------------------------------------------------------------- with a memory
def put(memory, session, text, *, days_ago, importance_text="", project="memdir", minute=0):
    start = NOW - timedelta(days=days_ago, minutes=-minute)
    messages = [Message("user", text + importance_text, start), Message("assistant", "Working on it.", start + timedelta(minutes=1))]
    from memdir.episodes.heuristics import describe

    episode = describe(Episode.from_messages(session, messages, project=project))
    return save(memory, episode).path


def test_rank_episodes_searches_episode_entries_only(memory):
    memory.write("fact/upload.md", "upload timeout retries", title="Upload", metadata={"type": "fact"})
    fresh = put(memory, "s1", "upload timeout in the retry loop", days_ago=1)
    old = put(memory, "s2", "upload timeout in the retry loop again", days_ago=200)
    important_old = put(memory, "s3", "upload timeout in the retry loop fixed", days_ago=200,
                        importance_text=". Remember: the root cause was the proxy.")
    ranked = rank_episodes(memory, "upload timeout retry loop", now=NOW, threshold=0.0)
    paths = [item.episode.path for item in ranked]
    assert paths[0] == fresh and set(paths) == {fresh, old, important_old}
    assert paths.index(important_old) < paths.index(old)
    assert all(path.startswith("experience/episodes/") for path in paths)


def test_nothing_relevant_means_nothing_injected(memory):
    put(memory, "s1", "upload timeout in the retry loop", days_ago=1)
    assert rank_episodes(memory, "banana bread recipe", now=NOW) == []
    assert rank_episodes(memory, "   ", now=NOW) == []


# ---------------------------------------------------------------- session start
def test_where_we_left_off_lists_the_projects_latest_episodes_newest_first(memory):
    put(memory, "s1", "set up the CI pipeline", days_ago=3)
    put(memory, "s2", "fix the flaky upload test", days_ago=1)
    put(memory, "s3", "plan the garden", days_ago=0.5, project="garden")
    text = where_we_left_off(memory, project="memdir", now=NOW)
    lines = text.splitlines()
    assert lines[0] == "<system-reminder>" and lines[-1] == "</system-reminder>"
    assert lines[1] == "🧭 Where we left off in memdir — the most recent episodes, newest first:"
    assert lines[2].startswith('- 🔄 ongoing · yesterday · "fix the flaky upload test"')
    assert lines[3].startswith('- 🔄 ongoing · 3 days ago · "set up the CI pipeline"')
    assert "garden" not in text


def test_where_we_left_off_respects_the_token_budget(memory):
    for n in range(10):
        put(memory, f"s{n}", f"task number {n} about the upload module and its retries", days_ago=n + 1)
    full = where_we_left_off(memory, project="memdir", now=NOW, token_budget=10_000)
    small = where_we_left_off(memory, project="memdir", now=NOW, token_budget=150)
    assert full.count("\n- ") == 10
    assert 1 <= small.count("\n- ") < 10 and len(small) / 4 <= 150
    assert "task number 0 " in small


def test_where_we_left_off_is_empty_without_episodes(memory):
    assert where_we_left_off(memory, project="memdir", now=NOW) == ""
    put(memory, "s1", "something", days_ago=1, project="other")
    assert where_we_left_off(memory, project="memdir", now=NOW) == ""
    assert where_we_left_off(memory, now=NOW) != ""  # no project: every episode counts
