"""Ingest: Claude Code JSONL and plain JSON transcripts become episode entries, idempotently."""

from __future__ import annotations

import json

import pytest

from memdir.core.entry import EPISODES_PREFIX
from memdir.core.errors import InputValidationError
from memdir.episodes.ingest import ingest, read_transcript

SESSION = "5f0c2a1e-0000-4000-8000-000000000001"
CWD = "/home/me/projects/memdir"


def line(kind, content, minute, **extra):
    record = {
        "type": kind, "sessionId": SESSION, "cwd": CWD, "uuid": f"u{minute}-{kind}",
        "timestamp": f"2025-06-01T10:{minute:02d}:00.000Z",
        "message": {"role": kind, "content": content}, **extra,
    }
    return json.dumps(record)


def claude_lines():
    return [
        json.dumps({"type": "summary", "summary": "Upload fix", "leafUuid": "x"}),
        line("user", "The upload test fails with ValueError in src/upload.py, please fix it.", 0),
        line("user", "<command-name>/model</command-name>", 0, isMeta=True),
        line("assistant", [
            {"type": "thinking", "thinking": "hmm"},
            {"type": "text", "text": "Let me run the tests."},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -q tests/test_upload.py"}},
        ], 1),
        line("user", [{"type": "tool_result", "tool_use_id": "t1", "content": "1 failed, 2 passed", "is_error": True}], 2),
        line("assistant", "The root cause was an empty header. Fixed it; all tests pass now.", 3),
        # 20 minutes later: a new episode
        line("user", "<system-reminder>📚 Found 2 memory entries CLAIM: x</system-reminder>Now update the README.", 23),
        line("assistant", [{"type": "text", "text": "Updating README.md."},
                           {"type": "tool_use", "id": "t2", "name": "Edit", "input": {"file_path": "/repo/README.md"}}], 24),
    ]


def write_claude(tmp_path, lines=None):
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_text("\n".join(lines or claude_lines()) + "\n", encoding="utf-8")
    return path


def entry_files(memory):
    return sorted(info.path for info in memory.list(EPISODES_PREFIX))


def test_claude_transcript_is_parsed_into_messages(tmp_path):
    transcript = read_transcript(write_claude(tmp_path))
    assert transcript.session_id == SESSION and transcript.cwd == CWD
    assert [(m.role, m.kind) for m in transcript.messages] == [
        ("user", "text"), ("assistant", "text"), ("assistant", "tool_use"), ("tool", "tool_result"),
        ("assistant", "text"), ("user", "text"), ("assistant", "text"), ("assistant", "tool_use"),
    ]
    assert transcript.messages[2].text == "Bash: pytest -q tests/test_upload.py"
    assert transcript.messages[3].is_error
    assert transcript.messages[5].text == "Now update the README."  # memdir's own reminder stripped
    assert transcript.messages[0].timestamp.isoformat() == "2025-06-01T10:00:00+00:00"


def test_ingest_stores_one_entry_per_episode(memory, tmp_path):
    report = ingest(memory, write_claude(tmp_path))
    assert len(report.created) == 2 and not report.updated and not report.unchanged
    first = memory.read(report.created[0])
    assert first.path.startswith("experience/episodes/2025-06-01/the-upload-test-fails-with-valueerror")
    meta = first.metadata.model_dump()
    assert {key: meta[key] for key in ("type", "source", "session_id", "outcome", "importance", "started", "ended",
                                       "messages", "project")} == {
        "type": "experience", "source": "transcript", "session_id": SESSION, "outcome": "success",
        "importance": 0.8, "started": "2025-06-01T10:00:00+00:00", "ended": "2025-06-01T10:03:00+00:00",
        "messages": 5, "project": "memdir",
    }
    assert meta["tags"][:4] == ["memdir", "ValueError", "upload.py", "test_upload.py"]
    assert meta["tokens"] > 0 and meta["episode"] == first.title
    assert first.title == "The upload test fails with ValueError in src/upload.py, please fix …"
    assert "## Key messages" in first.content and "root cause" in first.content
    assert len(first.content.split()) <= memory.settings.limits.word_limit
    second = memory.read(report.created[1]).metadata.model_dump()
    assert second["outcome"] == "ongoing" and "README.md" in second["tags"]


def test_a_transcripts_episodes_are_embedded_in_one_batch(memory, tmp_path, monkeypatch):
    embedder, calls = memory.model.peek(), []
    embed = embedder.embed
    monkeypatch.setattr(embedder, "embed", lambda texts: calls.append(len(texts)) or embed(texts))
    report = ingest(memory, write_claude(tmp_path), use_model=False)  # (no topic-shift embeddings)
    assert len(report.created) == 2 and calls == [2]
    assert all(memory.read(path).embedding is not None for path in report.created)


def test_reingesting_adds_and_rewrites_nothing(memory, tmp_path):
    path = write_claude(tmp_path)
    ingest(memory, path)
    before = {p: memory.read(p).updated_at for p in entry_files(memory)}
    report = ingest(memory, path)
    assert report.created == [] and report.updated == [] and len(report.unchanged) == 2
    assert {p: memory.read(p).updated_at for p in entry_files(memory)} == before


def test_a_grown_transcript_updates_the_last_episode_and_adds_new_ones(memory, tmp_path):
    lines = claude_lines()
    ingest(memory, write_claude(tmp_path, lines))
    grown = [*lines, line("assistant", "README updated; all done.", 25), line("user", "Next: release notes for v2.", 50)]
    report = ingest(memory, write_claude(tmp_path, grown))
    assert len(report.unchanged) == 1 and len(report.updated) == 1 and len(report.created) == 1
    assert len(entry_files(memory)) == 3
    assert memory.read(report.updated[0]).metadata.model_dump()["outcome"] == "success"


def test_plain_json_list_format(memory, tmp_path):
    path = tmp_path / "chat-42.json"
    path.write_text(json.dumps([
        {"role": "user", "content": "How do I rotate the API keys?", "timestamp": "2025-06-02T09:00:00Z"},
        {"role": "assistant", "content": "Use `gh secret set`; remember to restart the worker.", "timestamp": 1748854860},
        {"role": "user", "content": "Thanks, that worked.", "timestamp": 1748854920000},
        {"role": "user", "content": "Different question: lunch?", "timestamp": "2025-06-02T13:00:00Z"},
    ]), encoding="utf-8")
    report = ingest(memory, path, cwd="/work/keys")
    assert len(report.created) == 2
    meta = memory.read(report.created[0]).metadata.model_dump()
    assert meta["session_id"] == "chat-42" and meta["outcome"] == "success" and meta["importance"] == 0.9
    assert meta["project"] == "keys" and "gh" in meta["tags"]
    assert meta["ended"] == "2025-06-02T09:02:00+00:00"
    assert ingest(memory, path, cwd="/work/keys").created == []


def test_plain_json_object_with_messages_and_speakers(memory, tmp_path):
    path = tmp_path / "conv.json"
    path.write_text(json.dumps({"session_id": "locomo-1", "messages": [
        {"role": "user", "name": "Caroline", "id": "D1:1", "content": "I went to a support group yesterday.",
         "timestamp": "2023-05-08T13:56:00Z"},
        {"role": "assistant", "name": "Melanie", "id": "D1:2", "content": "That sounds powerful!",
         "timestamp": "2023-05-08T13:56:30Z"},
    ]}, indent=2), encoding="utf-8")
    transcript = read_transcript(path)
    assert transcript.session_id == "locomo-1"
    assert [(m.speaker, m.uid) for m in transcript.messages] == [("Caroline", "D1:1"), ("Melanie", "D1:2")]
    path_written = ingest(memory, path).created[0]
    assert "**Caroline**" in memory.read(path_written).content


def test_session_id_override_and_same_messages_in_two_sessions(memory, tmp_path):
    path = write_claude(tmp_path)
    ingest(memory, path)
    assert len(ingest(memory, path, session_id="other").created) == 2
    assert len(entry_files(memory)) == 4


def test_an_episode_the_agent_recorded_is_completed_not_duplicated(memory, tmp_path):
    from memdir.tools.episode_record import episode_record

    reply = episode_record(memory, None, "Fix upload header", "success", "Empty header; fixed.", ["upload.py"],
                           session_id=SESSION)
    recorded = reply.split("memory://", 1)[1].split(" ", 1)[0]
    lines = [
        line("user", "Fix the upload test please.", 0),
        line("assistant", [{"type": "tool_use", "id": "t9", "name": "mcp__memdir__EpisodeRecord", "input": {
            "name": "Fix upload header", "outcome": "success", "summary": "Empty header; fixed.", "tags": ["upload.py"]}}], 2),
        line("user", [{"type": "tool_result", "tool_use_id": "t9", "content": reply}], 2),
        line("user", "Now the docs.", 3),
    ]
    report = ingest(memory, write_claude(tmp_path, lines))
    assert report.updated == [recorded] and len(report.created) == 1
    meta = memory.read(recorded).metadata.model_dump()
    assert meta["episode"] == "Fix upload header" and meta["messages"] == 3 and meta["started"].startswith("2025-06-01T10:00")
    assert ingest(memory, write_claude(tmp_path, lines)).written == 0


def test_unreadable_transcripts_are_clear_errors(memory, tmp_path):
    with pytest.raises(InputValidationError, match="Cannot read transcript"):
        ingest(memory, tmp_path / "missing.jsonl")
    broken = tmp_path / "broken.json"
    broken.write_text("[{not json", encoding="utf-8")
    with pytest.raises(InputValidationError, match="not valid JSON"):
        ingest(memory, broken)


def test_garbage_lines_in_jsonl_are_skipped(memory, tmp_path):
    path = write_claude(tmp_path, ["not json", *claude_lines()[:3]])
    assert len(ingest(memory, path).created) == 1


# ---------------------------------------------------------------- sampling (a better name and summary)
def test_a_summarizer_names_new_episodes_and_is_not_asked_again(memory, tmp_path):
    from memdir.episodes.sampling import sampling_summarizer

    asked = []

    def ask(prompt, max_tokens):
        asked.append(prompt)
        return "NAME: Fix upload header parsing\nSUMMARY: An empty header broke uploads; fixed and tested."

    path = write_claude(tmp_path)
    report = ingest(memory, path, summarize=sampling_summarizer(ask))
    entry = memory.read(report.created[0])
    assert entry.title == "Fix upload header parsing"
    assert entry.content.splitlines()[2] == "An empty header broke uploads; fixed and tested."
    assert len(asked) == 2 and "Outcome (already classified): success" in asked[0]
    assert ingest(memory, path, summarize=sampling_summarizer(ask)).written == 0 and len(asked) == 2


@pytest.mark.parametrize("reply", [RuntimeError("client does not support sampling"), "no idea", None])
def test_a_failing_summarizer_falls_back_to_the_heuristics(memory, tmp_path, reply):
    from memdir.episodes.sampling import sampling_summarizer

    def ask(prompt, max_tokens):
        if isinstance(reply, Exception):
            raise reply
        return reply

    report = ingest(memory, write_claude(tmp_path), summarize=sampling_summarizer(ask))
    assert memory.read(report.created[0]).title.startswith("The upload test fails with ValueError")


def test_a_tags_marker_hints_the_episodes_tags_and_the_boundary_marker_adds_none(memory, tmp_path):
    lines = [
        line("user", "<!-- memdir:episode --> Ledger migration\nMove the ledger table to the new schema.", 0),
        line("assistant", "TAGS: ledger, migrations\nI will write the migration first.", 1),
        line("assistant", "Done <!-- memdir:tags postgres -->; the migration ran.", 2),
    ]
    report = ingest(memory, write_claude(tmp_path, lines))
    entry = memory.read(report.created[0])
    assert entry.metadata.tags[:4] == ["memdir", "ledger", "migrations", "postgres"]  # the project (CWD), then the hints
    assert "TAGS:" not in entry.content and "memdir:tags" not in entry.content


def test_the_boundary_marker_is_no_memdir_tag():
    from memdir.episodes.heuristics import extract_tags
    from memdir.episodes.model import Message

    messages = [Message(role="user", text="<!-- memdir:episode --> Fix the flaky upload test"),
                Message(role="assistant", text="It shared a temp dir; fixed.")]
    assert extract_tags(messages) == []
