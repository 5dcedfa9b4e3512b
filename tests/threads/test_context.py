"""Context strategies: budgets hold in every strategy, tool pairs stay whole, and each strategy keeps what it promises."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from memdir.core.units import estimate_tokens
from tests.threads.conftest import say

STRATEGIES = ["virtual", "fragment", "semantic"]
TOPICS = ["the garden roses", "the tax return", "the flight to Lisbon", "the broken laptop", "the birthday cake"]


def conversation(manager, thread="t", turns=200):
    """``turns`` turns: user and assistant messages about rotating topics, a tool exchange every 10 turns.

    The 200-turn log is written once per test run and copied (appending 220 events with an
    fsync each is most of these tests' time otherwise).
    """
    log = manager.folder / thread / "events.jsonl"
    if turns == 200 and not log.exists() and _PREBUILT:
        log.parent.mkdir(parents=True)
        log.write_bytes(_PREBUILT[0])
        return
    for turn in range(turns):
        topic = TOPICS[turn % len(TOPICS)]
        if turn % 10 == 9:
            say(manager, thread, "assistant", f"search notes for {topic}", call_id=f"call-{turn}")
            say(manager, thread, "tool", f"found 3 notes about {topic} (turn {turn})")
        else:
            role = "user" if turn % 2 == 0 else "assistant"
            say(manager, thread, role, f"Turn {turn}: let us talk about {topic}. " + "More detail here. " * (turn % 4))


_PREBUILT: list[bytes] = []


@pytest.fixture(scope="module", autouse=True)
def prebuilt_conversation(tmp_path_factory):
    from memdir.core.settings import Settings
    from memdir.threads.manager import ThreadManager

    settings = Settings(root=tmp_path_factory.mktemp("prebuilt"), thread_compact_chunks=0, thread_compact_tokens=0)
    manager = ThreadManager(settings.store_root, settings)
    conversation(manager, "t")
    _PREBUILT.append((manager.folder / "t" / "events.jsonl").read_bytes())
    yield
    _PREBUILT.clear()


def shown_ids(text: str) -> list[str]:
    return re.findall(r"^\[(c\d+)", text, flags=re.MULTILINE)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("budget", [50, 300, 2000])
def test_a_200_turn_conversation_stays_within_budget(make_manager, strategy, budget):
    manager = make_manager(thread_compact_chunks=0, thread_compact_tokens=0)  # no compaction: the strategy alone
    conversation(manager)
    manager.set_strategy("t", strategy)
    window = manager.context("t", budget, "Lisbon flight")
    assert 0 < window.tokens <= budget and estimate_tokens(window.text) == window.tokens
    assert window.strategy == strategy
    last = manager.state("t").chunks[-1].id
    assert last in window.shown  # the newest turn is always there


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_tool_call_and_its_result_are_shown_together_or_not_at_all(make_manager, strategy):
    manager = make_manager(thread_compact_chunks=0, thread_compact_tokens=0)
    conversation(manager)
    manager.set_strategy("t", strategy)
    state = manager.state("t")
    pairs = {}
    for chunk in state.chunks:
        if chunk.call_id:
            pairs.setdefault(chunk.call_id, []).append(chunk.id)
    for budget in (120, 400, 1500):
        shown = set(shown_ids(manager.context("t", budget, "laptop").text))
        for ids in pairs.values():
            assert len(ids) == 2 and (set(ids) <= shown or not set(ids) & shown), (budget, ids)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_30_kb_message_is_clipped_to_the_budget_and_kept_whole_in_the_log(manager, strategy):
    say(manager, "t", "user", "short question")
    big = "log line with some words\n" * 1230  # ~30 KB
    say(manager, "t", "tool", big)
    manager.set_strategy("t", strategy)
    window = manager.context("t", 2000)
    assert window.tokens <= 2000 and "…[clipped]" in window.text
    assert manager.state("t").chunks[-1].content == big


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_zero_budget_gives_an_empty_window(manager, strategy):
    conversation(manager, turns=20)
    manager.set_strategy("t", strategy)
    window = manager.context("t", 0)
    assert window.text == "" and window.tokens == 0


def test_a_negative_budget_is_refused(manager):
    from memdir.core.errors import InputValidationError

    say(manager, "t", "user", "hi")
    with pytest.raises(InputValidationError, match="budget_tokens"):
        manager.context("t", -1)


def test_fragment_is_the_same_for_the_same_thread_and_differs_between_threads(make_manager):
    manager = make_manager(thread_compact_chunks=0, thread_compact_tokens=0)
    conversation(manager, "a")
    manager.set_strategy("a", "fragment")
    manager.fork("a", "b")
    first = manager.context("a", 1200).text
    assert make_manager().context("a", 1200).text == first  # another process: the same sample
    assert manager.context("b", 1200).text != first  # seeded by the thread


def test_fragment_samples_newer_messages_more_often(make_manager):
    from memdir.threads.context.fragment import sampled

    manager = make_manager()
    units = [object() for _ in range(10_000)]
    import numpy as np

    chosen = sampled(units, np.random.default_rng(7).random(len(units)), manager.settings)  # type: ignore[arg-type]
    positions = [units.index(unit) for unit in chosen]
    older, newer = sum(p < 5000 for p in positions), sum(p >= 5000 for p in positions)
    assert 0.17 * len(units) < len(chosen) < 0.23 * len(units) and newer > 2 * older


def test_virtual_keeps_important_messages_and_brings_referenced_pages_back(make_manager):
    manager = make_manager(thread_compact_chunks=0, thread_compact_tokens=0)
    say(manager, "t", "user", "Remember: the door code is 4711.", importance=0.9)
    conversation(manager)
    window = manager.context("t", 600)
    assert "door code is 4711" in window.text and "[page p" in window.text
    assert "Turn 3: let us talk" not in window.text  # paged out, in page p0 (units 0-7)
    say(manager, "t", "user", "@@ref('p0')@@ show me the start again")
    assert manager.state("t").refs == ("p0",)
    referenced = manager.context("t", 600)
    assert "Turn 3: let us talk" in referenced.text and referenced.tokens <= 600
    manager.reference("t", "p0", keep=False)
    assert "Turn 3: let us talk" not in manager.context("t", 600).text


def test_semantic_brings_back_the_turns_nearest_the_query(make_manager):
    manager = make_manager(thread_compact_chunks=0, thread_compact_tokens=0)
    say(manager, "t", "user", "My sister Wilhelmina lives in Reykjavik and breeds alpacas.")
    conversation(manager)
    manager.set_strategy("t", "semantic")
    window = manager.context("t", 300, "Where does Wilhelmina live, and what does she breed?")
    assert "Reykjavik" in window.text
    assert "Reykjavik" not in manager.context("t", 300, "the birthday cake").text


def test_semantic_without_a_model_ranks_by_keywords_and_says_so(tmp_path):
    from memdir.core.settings import Settings
    from memdir.threads.manager import ThreadManager

    settings = Settings(root=tmp_path / "memory", thread_compact_chunks=0, thread_compact_tokens=0)
    manager = ThreadManager(settings.store_root, settings)  # no embedder
    say(manager, "t", "user", "My sister Wilhelmina lives in Reykjavik.")
    conversation(manager)
    manager.set_strategy("t", "semantic")
    window = manager.context("t", 300, "Wilhelmina")
    assert "Reykjavik" in window.text and any("no embedding model" in note for note in window.notes)


def test_a_new_process_resumes_the_thread_with_its_strategy(manager, tmp_path):
    conversation(manager, turns=30)
    say(manager, "t", "user", "switch please @@memory('fragment')@@")
    expected = manager.context("t", 400).text
    script = (
        "from memdir.core.settings import Settings\n"
        "from memdir.threads.manager import ThreadManager\n"
        f"settings = Settings(root={str(tmp_path / 'memory')!r})\n"
        "manager = ThreadManager(settings.store_root, settings)\n"
        "window = manager.context('t', 400)\n"
        "print(window.strategy)\n"
        "print(window.text, end='')\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    strategy, _, text = out.partition("\n")
    assert strategy == "fragment" and text == expected


def test_units_built_incrementally_match_a_rebuild(manager):
    from memdir.threads.context import ContextBuilder
    from memdir.threads.context.base import units_of

    builder = ContextBuilder("t", manager.settings)
    for turn in range(12):
        if turn % 5 == 4:
            say(manager, "t", "assistant", f"call {turn}", call_id=f"k{turn}")
            say(manager, "t", "tool", f"result {turn}")
        else:
            say(manager, "t", "user", f"turn {turn}")
        if turn == 8:
            manager.compact("t")
        builder.units(manager.state("t"))
        assert builder.units(manager.state("t")) == units_of(manager.state("t").chunks)
