"""Per-message discovery: SwarmMemory's skill reminder, the memories' one line each, thresholds, the floor,
the budget, silence."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from memdir.core.identity import Actor
from memdir.core.settings import Settings
from memdir.core.units import estimate_tokens
from memdir.tools.discovery import Found, discover, memory_reminder, render, skill_reminder

SKILLS = [
    Found("skill/debugging/api-errors.md", "Debug API Errors", "skill", 0.82),
    Found("skill/debugging/api-troubleshooting.md", "API Troubleshooting", "skill", 0.68),
]
MEMORIES = [
    Found("concept/api/error-handling.md", "API Error Handling", "concept", 0.75),
    Found("fact/api/endpoints.md", "API Documentation", "fact", 0.70),
    Found("experience/api-bug-2024.md", "Fixed API Bug 2024", "experience", 0.65),
]

SKILL_REMINDER = """<system-reminder>
🎯 Found 2 skill(s) in memory that may be relevant:

**Debug API Errors** (82% match)
Path: `skill/debugging/api-errors.md`
To use: `LoadSkill(file_path: "skill/debugging/api-errors.md")`

**API Troubleshooting** (68% match)
Path: `skill/debugging/api-troubleshooting.md`
To use: `LoadSkill(file_path: "skill/debugging/api-troubleshooting.md")`

If a skill matches your task: Load it to get instructions.
If none match: Ignore and proceed normally.
</system-reminder>"""

MEMORY_REMINDER = """<system-reminder>
📚 Found 3 memory entries that may provide context:

💡 **API Error Handling** `concept/api/error-handling.md` (concept, 75% match)
📋 **API Documentation** `fact/api/endpoints.md` (fact, 70% match)
🔍 **Fixed API Bug 2024** `experience/api-bug-2024.md` (experience, 65% match)

Read one with `MemoryRead(file_path: "<path>")`. These entries may contain relevant knowledge for your task.
</system-reminder>"""

OLD_MEMORY_LINES = """💡 **API Error Handling** (concept, 75% match)
Path: `concept/api/error-handling.md`
Read with: `MemoryRead(file_path: "concept/api/error-handling.md")`
"""
"""How SwarmMemory's reminder named one memory: three lines (and a blank one)."""


# --------------------------------------------------------------------------- formats
def test_skill_reminder_is_swarm_memorys_format():
    assert skill_reminder(SKILLS) == SKILL_REMINDER


def test_memory_reminder_names_each_entry_in_one_line():
    assert memory_reminder(MEMORIES) == MEMORY_REMINDER


def test_the_byte_budget_is_the_size_four_memories_took_in_three_lines_each():
    four_before = len("<system-reminder>\n📚 Found 4 memory entries that may provide context:\n\n"
                      "These entries may contain relevant knowledge for your task.\n</system-reminder>".encode())
    four_before += 4 * len(OLD_MEMORY_LINES.encode() + b"\n")
    assert Settings().discovery.reminder_bytes <= four_before


def test_an_entry_without_a_title_of_its_own_is_named_by_its_path_once():
    untitled = Found("turn/d1/3.md", "turn/d1/3.md", "experience", 0.5)
    assert memory_reminder([untitled]).splitlines()[3] == "🔍 `turn/d1/3.md` (experience, 50% match)"


def test_both_reminders_skills_first_separated_by_a_blank_line():
    assert render(SKILLS, MEMORIES) == f"{SKILL_REMINDER}\n\n{MEMORY_REMINDER}"
    assert render([], MEMORIES) == MEMORY_REMINDER
    assert render(SKILLS, []) == SKILL_REMINDER


def test_nothing_found_renders_nothing():
    assert render([], []) == ""
    assert skill_reminder([]) == memory_reminder([]) == ""


# --------------------------------------------------------------------------- budget
def test_the_weakest_results_are_dropped_to_fit_the_token_budget():
    full = render(SKILLS, MEMORIES)
    assert estimate_tokens(full) > 200
    trimmed = render(SKILLS, MEMORIES, token_budget=estimate_tokens(full) - 1)
    assert "Fixed API Bug 2024" not in trimmed  # 0.65: the weakest of all five
    assert "Found 2 memory entries" in trimmed and "Found 2 skill(s)" in trimmed
    assert estimate_tokens(trimmed) <= estimate_tokens(full) - 1


def test_a_tiny_budget_can_leave_only_the_best_result_or_nothing():
    one = render(SKILLS, MEMORIES, token_budget=estimate_tokens(skill_reminder(SKILLS[:1])))
    assert one == skill_reminder(SKILLS[:1])
    assert render(SKILLS, MEMORIES, token_budget=5) == ""


# --------------------------------------------------------------------------- searches, thresholds, floor
@dataclass
class Hit:
    path: str
    title: str
    score: float
    tags: tuple[str, ...] = ()
    matched: tuple[str, ...] = ()

    @property
    def relevance(self) -> float:  # the absolute part of the score, which discovery thresholds
        return self.score


class ScriptedMemory:
    """Answers search() from a fixed list, as the hybrid searcher would (threshold and type filter)."""

    def __init__(self, hits, settings=None):
        self.hits = hits
        self.settings = settings or Settings()
        self.calls = []
        self.actor = Actor()  # no role: no view

    def search(self, query, *, top_k, threshold=None, types=None, path_prefix=None, view=None):
        assert view is None
        call = {"query": query, "top_k": top_k, "threshold": threshold, "types": types}
        self.calls.append(call if path_prefix is None else {**call, "path_prefix": path_prefix})
        found = [
            h for h in self.hits
            if (types is None or h.path.split("/")[0] in types)
            and (threshold is None or h.score >= threshold)
            and (path_prefix is None or h.path.startswith(path_prefix))
        ]
        return sorted(found, key=lambda h: h.score, reverse=True)[:top_k]

    def list_page(self, after, limit, *, under=None, view=None):
        listed = sorted(h.path for h in self.hits if under is None or h.path.startswith(under))
        return SimpleNamespace(entries=listed[:limit])

    def reading(self, *, one_query=False, query=None):
        return contextlib.nullcontext()


HITS = [
    Hit("skill/git/rebase.md", "Rebase safely", 0.40),
    Hit("concept/git/history.md", "Git history model", 0.30),
    Hit("fact/git/remotes.md", "Our remotes", 0.22),
    Hit("experience/git-force-push.md", "Force push incident", 0.18),
]


def test_searches_skills_and_memories_with_swarm_memorys_filters():
    memory = ScriptedMemory(HITS)
    discover(memory, "how do I rebase?")
    # a pool ranked by score, kept by relevance and cut to 4 skills and at most 10 memories
    assert memory.calls == [
        {"query": "how do I rebase?", "top_k": 16, "threshold": None, "types": ["skill"]},
        # twice the pool: episodes are left out here, they get their own reminder
        {"query": "how do I rebase?", "top_k": 24, "threshold": None, "types": ["concept", "fact", "experience"]},
    ]  # (no episode is stored: no search for episodes; `tests/episodes/test_recall.py` finds stored ones)


def test_short_messages_use_the_lower_threshold_long_ones_the_higher():
    settings = Settings(discovery_threshold_short=0.25, discovery_threshold=0.35)
    short = discover(ScriptedMemory(HITS, settings), "rebase my git branch")
    assert "Rebase safely" in short and "Git history model" in short and "Our remotes" not in short
    long_message = "please explain how I should rebase my feature branch onto main without losing any work today"
    long = discover(ScriptedMemory(HITS, settings), long_message)
    assert "Rebase safely" in long and "Git history model" not in long


def test_the_floor_applies_whatever_the_thresholds_say():
    settings = Settings(discovery_threshold_short=0.0, discovery_min_score=0.2)
    text = discover(ScriptedMemory(HITS, settings), "rebase git branch")
    assert "Our remotes" in text and "Force push incident" not in text


def test_results_are_capped_at_top_k():
    many = [Hit(f"fact/x/{i}.md", f"Fact {i}", 0.9 - i / 100) for i in range(12)]
    many += [Hit(f"skill/x/{i}.md", f"Skill {i} for facts", 0.9 - i / 100) for i in range(8)]
    settings = Settings(discovery_reminder_bytes=0)
    text = discover(ScriptedMemory(many, settings), "facts about things")
    assert "Found 10 memory entries" in text and "Fact 9" in text and "Fact 10" not in text
    assert "Found 4 skill(s)" in text and "Skill 3" in text and "Skill 4" not in text


def test_memories_fill_the_byte_budget_short_lines_more_of_them():
    untitled = [Hit(f"fact/d{i}/{i}.md", f"fact/d{i}/{i}.md", 0.9 - i / 100) for i in range(12)]
    titled = [Hit(f"fact/payments/decision-{i}.md", f"Ledger migration decision number {i} with owners", 0.9 - i / 100)
              for i in range(12)]
    budget = Settings().discovery.reminder_bytes
    for hits, shown in ((untitled, 10), (titled, 4)):
        text = discover(ScriptedMemory(hits), "facts about the ledger things", include_skills=False)
        assert f"Found {shown} memory entries" in text
        assert len(text.encode()) <= budget
        assert "0.md" in text  # the weakest lines go: the best one stays


def test_the_best_memory_stays_however_small_the_byte_budget():
    settings = Settings(discovery_reminder_bytes=10)
    text = discover(ScriptedMemory(HITS, settings), "rebase git history", include_skills=False)
    assert "Found 1 memory entries" in text and "Git history model" in text


@pytest.mark.parametrize("message", ["", "   ", "zzz unrelated"])
def test_nothing_relevant_means_no_output_at_all(message):
    assert discover(ScriptedMemory(HITS if message.strip() == "" else []), message) == ""


def test_retrieval_mode_leaves_skills_out():
    text = discover(ScriptedMemory(HITS), "rebase git history", include_skills=False)
    assert "🎯" not in text and "LoadSkill" not in text and "📚" in text


# --------------------------------------------------------------------------- against a real store
def test_discovery_over_a_real_memory(tmp_path):
    from memdir.memory import Memory
    from tests.fakes import FakeEmbedder

    settings = Settings(root=tmp_path / "memory")
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        memory.write("skill/git/rebase.md", "Rebase a branch onto main safely: fetch, rebase, test, push.",
                     title="Rebase a branch safely", metadata={"type": "skill", "tags": ["git", "rebase"]})
        memory.write("fact/git/remotes.md", "Our git remotes: origin is GitHub, backup is the NAS.",
                     title="Git remotes", metadata={"type": "fact", "tags": ["git", "remotes"]})
        memory.write("concept/cooking/bread.md", "Bread rises because yeast produces carbon dioxide.",
                     title="Why bread rises", metadata={"type": "concept", "tags": ["baking"]})
        text = discover(memory, "git rebase onto main")
        assert 'To use: `LoadSkill(file_path: "skill/git/rebase.md")`' in text
        assert "bread" not in text.lower()
        assert discover(memory, "quantum chromodynamics lattice") == ""


def test_episodes_get_their_own_reminder_and_are_not_listed_twice(tmp_path):
    from memdir.memory import Memory
    from memdir.tools.episode_record import episode_record
    from tests.fakes import FakeEmbedder

    settings = Settings(root=tmp_path / "m", discovery_threshold_short=0.05, discovery_min_score=0.05)
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        episode_record(memory, None, name="Fix flaky pytest fixture", outcome="success",
                       summary="The flaky pytest fixture shared a temp dir; fixed with tmp_path.", tags=["pytest"])
        text = discover(memory, "flaky pytest fixture", settings)
    assert "🧭 Found 1 past episode(s)" in text
    assert "📚" not in text  # the episode is not repeated among the memories


def test_one_shared_word_is_not_a_match_even_for_the_best_keyword_hit(tmp_path):
    """BM25 over the query's best hit gives the best entry 1.0 whatever it shares; discovery ignores that part."""
    from memdir.memory import Memory

    settings = Settings(root=tmp_path / "memory", embeddings_enabled=False)  # keyword-only: the worst case
    with Memory.open(settings) as memory:
        memory.write("skill/release/notes.md", "Write the release notes from the merged pull requests.",
                     title="Release notes", metadata={"type": "skill", "tags": ["release"]})
        best = memory.search("Can you help me write a poem about cats", types=["skill"])[0]
        assert best.path == "skill/release/notes.md" and best.breakdown.bm25 == 1.0
        assert best.relevance < 0.25
        assert discover(memory, "Can you help me write a poem about cats") == ""
        assert "Release notes" in discover(memory, "write the release notes")


def test_while_the_model_loads_hits_say_keyword_match_not_a_semantic_percentage(tmp_path):
    """Keyword-only relevance ("has every word": 100%) is not shown on the semantic scale."""
    import threading

    from memdir.embeddings.provider import ModelProvider
    from memdir.memory import Memory
    from memdir.tools.discovery import KEYWORD_ONLY_NOTE
    from memdir.tools.episode_record import episode_record
    from tests.fakes import FakeEmbedder

    settings = Settings(root=tmp_path / "memory", search_model_wait=0)
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        memory.write("concept/git/rebase.md", "Rebasing replays your commits onto another branch.",
                     title="Git rebase", metadata={"type": "concept", "tags": ["git", "rebase"]})
        episode_record(memory, None, name="Rebase onto main", outcome="success",
                       summary="Rebased the feature branch onto main and fixed conflicts.", tags=["git", "rebase"])
    release = threading.Event()

    def loader():
        release.wait(10)
        return FakeEmbedder()

    memory = Memory.open(settings, model=ModelProvider(loader))
    memory.model.start_background()
    try:
        loading = discover(memory, "git rebase")
        assert "concept, keyword match" in loading and "[keyword match]" in loading
        assert "% match" not in loading
        assert KEYWORD_ONLY_NOTE in loading
        release.set()
        memory.model.get()
        ready = discover(memory, "git rebase")
        assert "% match" in ready and "keyword match" not in ready and KEYWORD_ONLY_NOTE not in ready
    finally:
        release.set()
        memory.close()


# --------------------------------------------------------------------------- names and rare words
@pytest.fixture
def people(tmp_path):
    from memdir.memory import Memory
    from tests.fakes import FakeEmbedder

    with Memory.open(Settings(root=tmp_path / "memory"), embedder=FakeEmbedder()) as memory:
        memory.write("experience/talk/1.md", "Caroline: I am single and happy, and I started the adoption process.",
                     title="Caroline, 8 May 2023", metadata={"type": "experience", "tags": ["Caroline"]})
        memory.write("experience/talk/2.md", "Melanie: My relationship with my husband is strong; 8 years married.",
                     title="Melanie, 8 May 2023", metadata={"type": "experience", "tags": ["Melanie"]})
        memory.write("fact/survey.md", "A generic measure of relationship status and satisfaction.",
                     title="Relationship survey", metadata={"type": "fact"})
        yield memory


def test_a_name_the_store_knows_must_be_mentioned(people):
    text = discover(people, "What is Caroline's relationship status?")
    assert "experience/talk/1.md" in text
    assert "fact/survey.md" not in text and "experience/talk/2.md" not in text  # common words, not about Caroline


def test_a_name_the_store_never_saw_counts_for_nothing(people):
    # Without "Gina" (no entry holds it) the message says two words: only an entry named for them may answer
    text = discover(people, "What is Gina's relationship status?")
    assert "experience/talk/1.md" not in text and "experience/talk/2.md" not in text  # other people's talk
    assert "fact/survey.md" in discover(people, "what is a relationship status survey?")  # no name: words decide


def test_names_are_capitalised_words_inside_a_sentence():
    from memdir.tools.discovery import names_in

    assert names_in("What did Caroline and Melanie paint? Jon too. I use Python") == {"carolin", "melani", "python"}
    assert names_in("how do I rebase my git branch?") == set()
    assert names_in("my unit tests fail randomly on CI") == set()  # an acronym is a term, not a name


@pytest.mark.parametrize(
    ("message", "names"),
    [
        ("Alice came.", set()),  # opens the message
        ("  Alice came.", {"alic"}),  # (leading spaces: not counted as the message's start)
        ("hi.\n  Alice came", set()),  # opens a line
        ("hi.\r\nAlice came", set()),
        ("done; Alice came", set()),  # after ; and a space: a sentence
        ("done;Alice came", {"alic"}),  # no space after the mark
        ("ask Alice: Bob knows", {"alic"}),  # after ": " a new clause opens
        ("x.\t\tAlice", set()),
    ],
)
def test_a_capitalised_word_opening_a_sentence_is_not_a_name(message, names):
    from memdir.tools.discovery import names_in

    assert names_in(message) == names
