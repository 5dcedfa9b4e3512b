"""The prefetch cache (seed 003, Component 3.4, with a real LRU cache): hits, misses, freshness, warming."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from memdir.cli import app
from memdir.server.prefetch import session_paths, warm
from memdir.storage.entry_cache import EntryCache


def put(memory, path, content="text", **metadata):
    return memory.write(path, content, title=path, metadata=metadata).entry


def test_an_agents_reads_are_served_from_the_cache_and_still_counted(store_kind, open_as):
    memory = open_as("alice")
    put(memory, "fact/a.md", "alpha")
    first = memory.read("fact/a.md", count_hit=True)  # a miss: read from the files, then cached
    second = memory.read("fact/a.md", count_hit=True)  # a hit
    third = memory.read("fact/a.md", count_hit=True)
    assert (first.content, second.content, third.content) == ("alpha",) * 3
    assert (first.hits, second.hits, third.hits) == (1, 2, 3)
    assert memory.adapter.read_entry("fact/a.md").hits == 3  # the .yml counts every read, hits included
    stats = memory.cache.stats()
    assert (stats.hits, stats.misses, stats.entries, stats.hit_rate) == (2, 1, 1, 2 / 3)


def test_a_change_by_any_process_or_path_makes_the_cached_entry_stale(open_as):
    reader, writer = open_as("alice"), open_as(None)  # two processes' worth of Memory on one root
    put(writer, "fact/a.md", "old")
    reader.read("fact/a.md", count_hit=True)
    put(writer, "fact/a.md", "new")  # changed behind the reader's back
    assert reader.read("fact/a.md", count_hit=True).content == "new"
    (reader.root / "fact" / "a.md").write_text("by hand")  # ... or by a text editor
    assert reader.read("fact/a.md", count_hit=True).content == "by hand"
    assert reader.cache.stats().hits == 0 and reader.cache.stats().misses == 3
    writer.delete("fact/a.md")
    assert reader.cache.get("fact/a.md") is None


def test_the_cache_is_least_recently_used_and_prefetching_twice_only_refreshes(open_as):
    memory = open_as("alice", prefetch_size=2)
    for name in "abc":
        put(memory, f"fact/{name}.md", name)
    assert memory.prefetch(["fact/a.md", "fact/b.md", "fact/a.md"]) == 3
    assert (memory.cache.stats().entries, memory.cache.stats().prefetched) == (2, 2)  # a, cached, is not read again
    memory.prefetch(["fact/c.md"])  # evicts b, the least recently used
    assert "fact/b.md" not in memory.cache and "fact/a.md" in memory.cache and "fact/c.md" in memory.cache
    assert memory.prefetch(["fact/missing.md"]) == 0  # a guess that misses is skipped


def test_a_cache_of_size_zero_is_no_cache(open_as):
    memory = open_as("alice", prefetch_size=0)
    put(memory, "fact/a.md")
    assert memory.cache is None and memory.read("fact/a.md", count_hit=True).hits == 1
    assert warm(memory) == 0


def test_warming_takes_the_roles_recent_and_important_entries(store_kind, open_as):
    writer = open_as("w")
    put(writer, "fact/arch.md", kind="architecture", importance=9)  # not a reviewer's kind
    put(writer, "fact/bug-old.md", kind="bug", importance=9)
    for i in range(5):
        put(writer, f"fact/note-{i}.md", kind="bug")
    reviewer = open_as("rita", "reviewer", prefetch_recent=3, prefetch_important=2)
    chosen = session_paths(reviewer)
    assert chosen[:3] == ["fact/note-4.md", "fact/note-3.md", "fact/note-2.md"]  # the latest first
    assert chosen[3:] == ["fact/bug-old.md"]  # important (>= 8) and in the view; arch.md is not
    assert warm(reviewer) == 4
    reviewer.read("fact/bug-old.md", count_hit=True)
    assert reviewer.cache.stats().hits == 1 and reviewer.cache.stats().prefetched == 4


def test_warming_an_empty_store_prefetches_nothing(open_as):
    assert warm(open_as("alice", "executor")) == 0


def test_status_shows_the_hit_rate_here_and_in_another_process(open_as, tmp_path):
    server = open_as("alice", "executor")
    put(server, "fact/a.md")
    assert server.status().prefetch is None or server.status().prefetch.hits == 0
    for _ in range(4):
        server.read("fact/a.md", count_hit=True)
    report = server.status().prefetch
    assert (report.hits, report.misses, report.hit_rate, report.agent) == (3, 1, 0.75, "alice (executor)")
    server.close()  # a server saves its figures on the way out (and every 50 reads)
    result = CliRunner().invoke(app, ["status", "--root", str(tmp_path / "memory"), "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)["prefetch"]
    assert (shown["hits"], shown["misses"], shown["hit_rate"], shown["agent"]) == (3, 1, 0.75, "alice (executor)")
    table = CliRunner().invoke(app, ["status", "--root", str(tmp_path / "memory")])
    assert "75.0% (3 hits, 1 misses" in table.output


def test_an_entry_changed_between_its_stats_and_its_read_is_never_served(tmp_path):
    """Stats are taken before the read: a change in between leaves the cached copy older than its stats say."""
    from memdir.core.settings import Settings
    from memdir.memory import Memory
    from tests.fakes import FakeEmbedder

    with Memory.open(Settings(root=tmp_path / "m"), embedder=FakeEmbedder()) as memory:
        put(memory, "fact/a.md", "one")
        cache = EntryCache(memory.adapter.stats, 10, stats_each=memory.adapter.stats_each)
        stats = cache.stats_of("fact/a.md")
        put(memory, "fact/a.md", "two")  # lands between the stats and the read
        cache.put(memory.read("fact/a.md"), stats)
        assert cache.get("fact/a.md") is None


def test_a_new_servers_hit_rate_is_its_own_from_the_start(open_as, tmp_path):
    import os

    from memdir.core.settings import Settings
    from memdir.server.state import MemoryHost
    from tests.fakes import FakeEmbedder

    first = open_as("alice", "executor")
    put(first, "fact/a.md")
    for _ in range(4):
        first.read("fact/a.md", count_hit=True)
    first.close()  # saves 3 hits, 1 miss
    second = MemoryHost._open(Settings(root=tmp_path / "memory", agent="alice", role="executor"), FakeEmbedder())
    try:
        report = second.status().prefetch
        assert (report.hits, report.misses, report.pid) == (0, 0, os.getpid())
        assert report.prefetched == 1  # its own session-start warming
    finally:
        second.close()


def test_loading_a_skill_prefetches_what_its_work_will_read(open_as):
    from memdir.server.prefetch import warm_for_phase
    from memdir.tools.load_skill import load_skill
    from memdir.tools.session import Session

    writer = open_as("w")
    writer.write("skill/ledger/migrate.md", "Migrate the ledger schema: backfill, then add constraints.",
                 title="Ledger schema migration", metadata={"type": "skill"})
    put(writer, "fact/ledger-migrations.md", "Ledger schema migrations add nullable columns, backfill, then constrain.")
    put(writer, "fact/lunch.md", "Lunch is at noon on Fridays.")
    agent = open_as("eve", prefetch_recent=0, prefetch_important=0)
    skill = load_skill(agent, Session(), "skill/ledger/migrate.md")
    assert warm_for_phase(agent, skill.about) >= 1
    agent.read("fact/ledger-migrations.md", count_hit=True)
    assert agent.cache.stats().hits == 1
