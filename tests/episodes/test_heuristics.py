"""Deterministic outcome classification, tag extraction, importance, name and summary."""

from __future__ import annotations

import pytest

from memdir.episodes.heuristics import (
    classify_outcome,
    describe,
    episode_name,
    extract_tags,
    message_importance,
    summarize,
)
from memdir.episodes.model import Episode, Message


def user(text):
    return Message(role="user", text=text)


def assistant(text):
    return Message(role="assistant", text=text)


def tool_call(tool, text):
    return Message(role="assistant", text=f"{tool}: {text}", kind="tool_use", tool=tool)


def output(text, is_error=False):
    return Message(role="tool", text=text, kind="tool_result", is_error=is_error)


# ---------------------------------------------------------------- outcome
@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        ([user("fix the test"), output("4 passed in 0.3s"), assistant("All tests pass now.")], "success"),
        ([user("fix the test"), assistant("Fixed the failing test; it was a stale fixture.")], "success"),
        ([user("fix it"), assistant("done"), user("thanks, perfect")], "success"),
        ([user("fix the test"), output("1 failed, 3 passed")], "failure"),
        ([user("deploy"), output("Traceback (most recent call last):\n  ...\nKeyError: 'x'")], "failure"),
        ([user("deploy"), output("", is_error=True)], "failure"),
        ([user("try again"), assistant("It still fails; I could not find the cause.")], "failure"),
        ([user("push it"), assistant("I'm blocked: I need access to the staging cluster.")], "blocked"),
        ([user("merge"), assistant("Waiting on review from the platform team.")], "blocked"),
        ([user("let's look at the parser"), assistant("Reading parser.py now.")], "ongoing"),
        ([user("x"), assistant("It failed.\nOUTCOME: blocked")], "blocked"),
    ],
)
def test_outcome(messages, expected):
    assert classify_outcome(messages) == expected


def test_the_last_signal_wins():
    messages = [user("fix it"), output("1 failed"), assistant("The root cause was the cache."), output("5 passed")]
    assert classify_outcome(messages) == "success"
    assert classify_outcome([*messages, output("2 failed")]) == "failure"


def test_explicit_outcome_marker_wins_over_later_signals():
    messages = [assistant("OUTCOME: success"), output("1 failed")]
    assert classify_outcome(messages) == "success"


def test_early_signals_outside_the_tail_do_not_decide():
    messages = [assistant("fixed it"), *[user(f"let's talk about item {n}") for n in range(20)]]
    assert classify_outcome(messages) == "ongoing"


def test_tool_output_prose_does_not_count_as_a_verdict():
    assert classify_outcome([user("show the log"), output("the job failed yesterday and was retried")]) == "ongoing"


# ---------------------------------------------------------------- tags
def test_tags_cover_files_repos_errors_errno_http_and_commands():
    messages = [
        user("The upload in src/memdir/store.py raises ValueError, see https://github.com/acme/uploader/issues/3"),
        tool_call("Bash", "cd repo && git status && pytest -q tests/test_store.py | tail -5"),
        output("E   FileNotFoundError: ENOENT: no such file 'x.txt'\nHTTP/1.1 503 Service Unavailable"),
        assistant("Got `404 Not Found` from the API; running `ruff` next. Also check Dockerfile."),
    ]
    assert extract_tags(messages, project="memdir") == [
        "memdir", "ValueError", "acme/uploader", "store.py", "test_store.py", "git", "pytest", "FileNotFoundError",
        "ENOENT", "HTTP 503", "HTTP 404", "Dockerfile",
    ]


def test_file_names_inside_tool_output_are_not_tags():
    messages = [user("read the config"), output("import os\nfrom helpers.py import x\nsee other.md")]
    assert extract_tags(messages) == []


def test_tags_are_ranked_by_frequency_and_deduplicated_ignoring_case():
    messages = [user("edit b.py"), user("a.py, then a.py again, and b.py"), user("also A.py")]
    assert extract_tags(messages) == ["a.py", "b.py"]  # a.py three times (any case), b.py twice
    assert extract_tags(messages, project="B.PY") == ["B.PY", "a.py"]


def test_words_that_merely_look_like_errno_are_not_tags():
    assert extract_tags([assistant("EPISODE: x ENDEX: y END ERROR Error")]) == []


def test_tag_count_is_capped():
    messages = [user(" ".join(f"file{n}.py" for n in range(30)))]
    assert len(extract_tags(messages)) == 12


# ---------------------------------------------------------------- importance
@pytest.mark.parametrize(
    ("message", "importance"),
    [
        (user("Remember: the staging DB is read-only."), 0.9),
        (assistant("The root cause was a stale lock file."), 0.8),
        (user("No, that's the wrong file."), 0.8),
        (assistant("We decided to use SQLite FTS5."), 0.75),
        (assistant("I'm blocked on credentials."), 0.7),
        (assistant("It raised KeyError."), 0.6),
        (output("", is_error=True), 0.6),
        (user("what's in the folder?"), 0.3),
        (assistant("Here it is."), 0.2),
        (output("file listing"), 0.1),
    ],
)
def test_message_importance(message, importance):
    assert message_importance(message) == importance


def test_episode_importance_is_the_max_over_its_messages():
    episode = describe(Episode.from_messages("s", [user("hello there friend"), user("remember to use uv"), assistant("ok")]))
    assert episode.importance == 0.9


# ---------------------------------------------------------------- name and summary
def test_name_skips_greetings_and_uses_the_first_request():
    assert episode_name([user("Hi!"), assistant("Hello"), user("Please fix the flaky upload test.")]) == (
        "Please fix the flaky upload test"
    )


def test_name_from_marker_and_clipped_to_ten_words():
    assert episode_name([user("go")], "ship it") == "ship it"
    assert episode_name([user("CLAIM: refactor the parser")]) == "refactor the parser"
    long = episode_name([user(" ".join(["word"] * 30))])
    assert long.split()[-1] == "…" and len(long.split()) == 11


def test_summary_is_one_short_paragraph_with_the_outcome():
    episode = describe(Episode.from_messages("s", [
        user("Fix the ValueError in parser.py"),
        assistant("The root cause was an empty header."),
        output("3 passed"),
        assistant("All tests pass now."),
    ]))
    assert episode.summary == (
        "User: Fix the ValueError in parser.py. The root cause was an empty header. Errors: ValueError. "
        "Last (assistant): All tests pass now. Outcome: success."
    )
    assert "\n" not in summarize(episode)


@pytest.mark.parametrize(("text", "tags"), [
    ("I ran pytest and it passed", ["pytest"]),
    ("now git push the branch", ["git"]),
    ("ran make and then docker-compose up", ["docker-compose", "make"]),
    ("make sure the node is healthy, go ahead", []),  # everyday words without a verb of running
    ("See pytest.ini and the git-hooks folder", ["pytest.ini"]),  # parts of other names: a file, not a command
])
def test_commands_named_in_prose_are_tags(text, tags):
    assert extract_tags([user(text)]) == tags


def test_markers_do_not_leak_into_the_summary_or_the_key_messages():
    episode = describe(Episode.from_messages("s", [
        user("EPISODE: deploy the site\nPlease deploy the site to staging with the new config."),
        assistant("Deployed to staging; the health check passes.\nENDEX: done"),
    ]))
    assert episode.name == "deploy the site"
    assert "EPISODE" not in episode.summary and "ENDEX" not in episode.summary
    assert episode.summary.startswith("User: Please deploy the site to staging")
