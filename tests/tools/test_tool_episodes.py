"""EpisodeRecord and EpisodeList: the agent records episodes itself, and lists past ones with filters."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memdir.core.errors import InputValidationError
from memdir.tools.episode_list import episode_list
from memdir.tools.episode_record import episode_record
from memdir.tools.session import Session

NOW = datetime(2025, 6, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def session():
    return Session(session_id="sess-1")


def record(memory, session, name, outcome, *, days_ago=0.0, tags=None, summary="Did the thing."):
    return episode_record(memory, session, name, outcome, summary, tags, now=NOW - timedelta(days=days_ago))


# ---------------------------------------------------------------- EpisodeRecord
def test_record_writes_an_experience_entry(memory, session):
    reply = record(memory, session, "Fix flaky upload test", "success", tags=["upload.py", "pytest"],
                   summary="The root cause was a shared temp dir; fixed with tmp_path.")
    path = reply.split("memory://", 1)[1].split(" ", 1)[0]
    assert reply == f'Recorded episode memory://{path} "Fix flaky upload test" (✅ success, importance 0.80).'
    assert path.startswith("experience/episodes/2025-06-30/fix-flaky-upload-test-")
    entry = memory.read(path)
    meta = entry.metadata.model_dump()
    assert entry.title == "Fix flaky upload test"
    assert {key: meta[key] for key in ("type", "source", "session_id", "episode", "outcome", "tags", "started")} == {
        "type": "experience", "source": "agent", "session_id": "sess-1", "episode": "Fix flaky upload test",
        "outcome": "success", "tags": ["upload.py", "pytest"], "started": "2025-06-30T12:00:00+00:00",
    }
    assert entry.content.splitlines()[2] == "The root cause was a shared temp dir; fixed with tmp_path."
    assert memory.search("flaky upload temp dir", top_k=1)[0].path == path


def test_record_importance_floor_and_setbacks(memory, session):
    assert "importance 0.60" in record(memory, session, "Tidy", "success", summary="Tidied the module.")
    assert "importance 0.70" in record(memory, session, "Deploy", "blocked", summary="Waiting for a token.")


def test_record_without_a_session_uses_the_given_id_or_agent(memory):
    reply = episode_record(memory, None, "A", "ongoing", "Half done.", session_id="explicit", now=NOW)
    path = reply.split("memory://", 1)[1].split(" ", 1)[0]
    assert memory.read(path).metadata.model_dump()["session_id"] == "explicit"
    reply = episode_record(memory, None, "B", "ongoing", "Half done.", now=NOW)
    path = reply.split("memory://", 1)[1].split(" ", 1)[0]
    assert memory.read(path).metadata.model_dump()["session_id"] == "agent"


def test_record_accepts_tags_as_a_json_string(memory, session):
    reply = episode_record(memory, session, "X", "success", "Done.", '["a", "b"]', now=NOW)
    path = reply.split("memory://", 1)[1].split(" ", 1)[0]
    assert memory.read(path).metadata.tags == ["a", "b"]


@pytest.mark.parametrize(
    ("name", "outcome", "summary", "message"),
    [
        ("", "success", "x", "name is required"),
        ("X", "done", "x", "outcome must be one of success, failure, blocked, ongoing; got 'done'"),
        ("X", "success", "  ", "summary is required"),
        ("X", "success", "word " * 251, "summary exceeds the 250-word limit (251 words)"),
    ],
)
def test_record_refuses_bad_arguments(memory, session, name, outcome, summary, message):
    with pytest.raises(InputValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        episode_record(memory, session, name, outcome, summary)
    assert memory.list("experience/") == []


# ---------------------------------------------------------------- EpisodeList
@pytest.fixture
def history(memory, session):
    record(memory, session, "Set up CI", "success", days_ago=10, tags=["github-actions"])
    record(memory, session, "Debug upload timeout", "failure", days_ago=3, tags=["upload.py", "TimeoutError"])
    record(memory, session, "Deploy to staging", "blocked", days_ago=1, tags=["kubectl"])
    record(memory, session, "Refactor upload client", "ongoing", days_ago=0.1, tags=["upload.py"])
    return memory


def names(text):
    return [line.split('"')[1] for line in text.splitlines() if line.startswith("- ")]


def test_list_is_most_recent_first(history, session):
    text = episode_list(history, session, now=NOW)
    assert text.splitlines()[0] == "Episodes (4 episodes, most recent first):"
    assert names(text) == ["Refactor upload client", "Deploy to staging", "Debug upload timeout", "Set up CI"]
    assert text.splitlines()[1] == (
        '- 2025-06-30 09:36 🔄 ongoing · "Refactor upload client" · importance 0.60 · tags: upload.py'
    )
    assert text.splitlines()[2].startswith("  memory://experience/episodes/2025-06-30/refactor-upload-client-")


def test_list_filters(history, session):
    assert names(episode_list(history, session, outcome="failure", now=NOW)) == ["Debug upload timeout"]
    assert names(episode_list(history, session, tag="UPLOAD.PY", now=NOW)) == ["Refactor upload client", "Debug upload timeout"]
    assert names(episode_list(history, session, since="2d", now=NOW)) == ["Refactor upload client", "Deploy to staging"]
    assert names(episode_list(history, session, since="2025-06-25", now=NOW)) == [
        "Refactor upload client", "Deploy to staging", "Debug upload timeout"]
    assert names(episode_list(history, session, limit=1, now=NOW)) == ["Refactor upload client"]
    header = episode_list(history, session, outcome="blocked", tag="kubectl", now=NOW).splitlines()[0]
    assert header == "Episodes (1 episode, most recent first; outcome=blocked, tag=kubectl):"


def test_list_when_nothing_matches(history, session, memory):
    assert episode_list(history, session, outcome="success", tag="nope", now=NOW).startswith(
        "No episodes found matching outcome=success, tag=nope.")


def test_list_on_an_empty_memory(memory, session):
    assert episode_list(memory, None, now=NOW).startswith("No episodes found. Episodes come from")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"outcome": "won"}, "outcome must be one of"),
        ({"limit": 0}, "limit must be a whole number from 1 to 200"),
        ({"limit": 500}, "limit must be a whole number from 1 to 200"),
        ({"since": "last tuesday"}, "Cannot read since='last tuesday' as a time"),
    ],
)
def test_list_refuses_bad_arguments(memory, session, kwargs, message):
    with pytest.raises(InputValidationError, match=message):
        episode_list(memory, session, **kwargs)
