"""Episode boundaries: pauses, each explicit marker, and topic shifts between embedding windows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memdir.episodes.model import Message
from memdir.episodes.segment import EPISODE_MARKER, Segment, SegmentConfig, segment, window_distances
from tests.fakes import FakeEmbedder

T0 = datetime(2025, 6, 1, 10, 0, tzinfo=UTC)
NO_TOPIC = SegmentConfig(topic_threshold=None)


def msg(text, role="user", minute=None, **fields):
    return Message(role=role, text=text, timestamp=None if minute is None else T0 + timedelta(minutes=minute), **fields)


def starts(segments):
    return [(s.start, s.boundary, s.name) for s in segments]


def test_no_messages_no_episodes():
    assert segment([], NO_TOPIC) == []


def test_one_conversation_is_one_episode():
    messages = [msg("fix the bug", minute=0), msg("done", "assistant", minute=2)]
    assert segment(messages, NO_TOPIC) == [Segment(0, 2, "start", None)]


def test_pause_over_five_minutes_starts_a_new_episode():
    messages = [msg("a", minute=0), msg("b", "assistant", minute=4), msg("c", minute=9.5), msg("d", "assistant", minute=10)]
    assert starts(segment(messages, NO_TOPIC)) == [(0, "start", None), (2, "pause", None)]


def test_pause_of_exactly_five_minutes_does_not_cut():
    messages = [msg("a", minute=0), msg("b", minute=5)]
    assert len(segment(messages, NO_TOPIC)) == 1


def test_pause_is_configurable():
    messages = [msg("a", minute=0), msg("b", minute=9)]
    assert len(segment(messages, SegmentConfig(pause=timedelta(minutes=10), topic_threshold=None))) == 1
    assert len(segment(messages, SegmentConfig(pause=timedelta(minutes=2), topic_threshold=None))) == 2


def test_messages_without_timestamps_never_pause():
    assert len(segment([msg("a"), msg("b"), msg("c")], NO_TOPIC)) == 1


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("CLAIM: refactor the upload module", "refactor the upload module"),
        ("EPISODE: write the release notes", "write the release notes"),
        (f"{EPISODE_MARKER} migrate the database", "migrate the database"),
        ("OK, next task: add retries to the client", "add retries to the client"),
        ("Great. On to the next task then.", None),
        ("**CLAIM:** tidy the README", "tidy the README"),
    ],
)
def test_start_markers_begin_an_episode_at_their_message(text, name):
    messages = [msg("first thing"), msg("sure", "assistant"), msg(text), msg("on it", "assistant")]
    assert starts(segment(messages, NO_TOPIC)) == [(0, "start", None), (2, "marker", name)]


def test_a_marker_in_the_first_message_names_the_first_episode():
    result = segment([msg("CLAIM: fix CI"), msg("ok", "assistant")], NO_TOPIC)
    assert starts(result) == [(0, "start", "fix CI")]


def test_endex_ends_the_episode_after_its_message():
    messages = [msg("do it"), msg("Done.\nENDEX: shipped", "assistant"), msg("now something else"), msg("ok", "assistant")]
    assert starts(segment(messages, NO_TOPIC)) == [(0, "start", None), (2, "marker", None)]


def test_episode_record_call_ends_the_episode_after_its_result():
    messages = [
        msg("fix the test"),
        msg("EpisodeRecord: {...}", "assistant", kind="tool_use", tool="mcp__memdir__EpisodeRecord"),
        msg("Recorded episode memory://experience/episodes/x.md", "tool", kind="tool_result"),
        msg("next, update the docs"),
    ]
    assert starts(segment(messages, NO_TOPIC)) == [(0, "start", None), (3, "agent", None)]


def test_markers_inside_tool_output_are_ignored():
    messages = [
        msg("read the notes"),
        msg("CLAIM: something\nENDEX: x\nnext task", "tool", kind="tool_result"),
        msg("summarise them", "assistant"),
    ]
    assert len(segment(messages, NO_TOPIC)) == 1


def test_a_marker_and_a_pause_on_one_message_make_one_boundary():
    messages = [msg("a", minute=0), msg("CLAIM: b", minute=30)]
    assert starts(segment(messages, NO_TOPIC)) == [(0, "start", None), (1, "marker", "b")]


# ---------------------------------------------------------------- topic shift
CODE = [
    "the pytest suite fails on the upload module",
    "pytest shows a timeout in the upload module test",
    "raise the pytest timeout for the upload test",
    "the upload module test passes with pytest now",
    "run the whole pytest suite for the upload module",
    "pytest suite green, upload module fixed",
    "commit the upload module test fix",
    "push the upload module fix",
]
COOKING = [
    "what should I cook for dinner tonight with tomatoes",
    "a tomato pasta recipe with basil and garlic",
    "cook the pasta and simmer the tomato sauce",
    "add basil and garlic to the tomato sauce",
    "serve the pasta with parmesan cheese",
    "dinner recipe for pasta done, tomatoes used",
    "dessert recipe after the pasta dinner",
    "bake a simple cake for dessert",
]


def alternate(texts):
    return [msg(text, "user" if n % 2 == 0 else "assistant") for n, text in enumerate(texts)]


def test_topic_shift_cuts_where_the_subject_changes():
    messages = alternate(CODE + COOKING)
    result = segment(messages, SegmentConfig(topic_threshold=0.55, window=4, min_messages=6), FakeEmbedder())
    assert starts(result) == [(0, "start", None), (8, "topic", None)]


def test_one_subject_has_no_topic_boundary():
    messages = alternate(CODE + CODE)
    assert len(segment(messages, SegmentConfig(topic_threshold=0.55, window=4), FakeEmbedder())) == 1


def test_topic_detection_needs_an_embedder_and_a_threshold():
    messages = alternate(CODE + COOKING)
    assert len(segment(messages, SegmentConfig(topic_threshold=0.55, window=4))) == 1
    assert len(segment(messages, SegmentConfig(topic_threshold=None, window=4), FakeEmbedder())) == 1


def test_min_messages_prevents_tiny_topic_episodes():
    messages = alternate(CODE[:3] + COOKING)
    config = SegmentConfig(topic_threshold=0.55, window=3, min_messages=6)
    assert len(segment(messages, config, FakeEmbedder())) == 1
    loose = SegmentConfig(topic_threshold=0.55, window=3, min_messages=2)
    assert starts(segment(messages, loose, FakeEmbedder()))[1] == (3, "topic", None)


def test_tool_messages_do_not_take_part_in_topic_windows():
    messages = alternate(CODE[:4])
    messages.insert(2, msg("bake a cake " * 20, "tool", kind="tool_result"))
    distances = window_distances(messages, FakeEmbedder(), window=2)
    assert 2 not in distances and set(distances) == {3}


def test_boundaries_do_not_move_when_the_transcript_grows():
    full = alternate(CODE + COOKING + CODE)
    config = SegmentConfig(topic_threshold=0.55, window=4, min_messages=6)
    final = starts(segment(full, config, FakeEmbedder()))
    for size in range(1, len(full) + 1):
        partial = starts(segment(full[:size], config, FakeEmbedder()))
        assert partial == [cut for cut in final if cut[0] < size][: len(partial)]
        assert all(cut in final for cut in partial)
