"""`Memory`: files, derived index and model kept in step, across instances and processes."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import time
from datetime import UTC

import pytest

from memdir.core.errors import EntryNotFoundError
from memdir.core.settings import Settings
from memdir.embeddings.provider import ModelProvider
from memdir.memory import Memory
from memdir.search.text_search import path_filter
from tests.fakes import FakeEmbedder

pytestmark = pytest.mark.usefixtures("store_kind")  # the directory store, then PostgreSQL


@pytest.fixture
def settings(tmp_path):
    return Settings(root=tmp_path / "memory")


@pytest.fixture
def memory(settings):
    with Memory.open(settings, embedder=FakeEmbedder()) as opened:
        yield opened


def write_fact(memory, name, text, **meta):
    return memory.write(f"fact/{name}", text, title=name.replace("-", " ").title(), metadata={"type": "fact", **meta})


def test_write_read_delete_round_trip(memory):
    result = write_fact(memory, "paris", "Paris is the capital of France.", tags=["geo"])
    assert result.overwritten is False
    assert result.entry.path == "fact/paris.md"
    assert result.entry.embedded
    entry = memory.read("fact/paris")
    assert (entry.content, entry.title, entry.metadata.tags) == ("Paris is the capital of France.", "Paris", ["geo"])
    assert write_fact(memory, "paris", "Paris, on the Seine.").overwritten is True
    memory.delete("fact/paris.md")
    assert not memory.exists("fact/paris")
    with pytest.raises(EntryNotFoundError):
        memory.read("fact/paris")
    assert "fact/paris.md" not in [r.path for r in memory.search("Seine")]


def test_search_finds_entries_with_score_breakdown(memory):
    write_fact(memory, "paris", "Paris is the capital of France.")
    write_fact(memory, "tokyo", "Tokyo is the capital of Japan.")
    results = memory.search("capital of France", top_k=2)
    assert results[0].path == "fact/paris.md"
    assert results[0].mode == "hybrid"
    assert results[0].breakdown.semantic is not None and results[0].breakdown.bm25 > 0


def test_filters_apply_before_the_top_k_cut(memory):
    for i in range(20):
        write_fact(memory, f"python-{i}", f"Python tip number {i} about python lists.")
    memory.write("concept/python", "Python is a language.", title="Python", metadata={"type": "concept"})
    results = memory.search("python", top_k=1, types=["concept"])
    assert [r.path for r in results] == ["concept/python.md"]


def test_without_a_model_writes_succeed_and_search_is_keyword_only(tmp_path):
    settings = Settings(root=tmp_path / "m", embeddings_enabled=False)
    with Memory.open(settings) as memory:
        entry = write_fact(memory, "paris", "Paris is the capital of France.").entry
        assert not entry.embedded
        results = memory.search("capital France")
        assert results[0].path == "fact/paris.md" and results[0].mode == "keyword"
        status = memory.status()
        assert status.model_state == "disabled" and status.embedded == 0
        assert (status.entries, status.builtins) == (1, 1)  # the entry; the built-in skill apart


def test_entries_written_without_a_model_are_embedded_once_it_is_ready(tmp_path):
    settings = Settings(root=tmp_path / "m", embeddings_enabled=False)
    with Memory.open(settings) as memory:
        write_fact(memory, "paris", "Paris is the capital of France.")
    # a command (status, search, the discover hook) leaves a backlog larger than one batch alone...
    with Memory.open(Settings(root=tmp_path / "m", embed_batch_size=1), embedder=FakeEmbedder()) as memory:
        assert not memory.read("fact/paris").embedded
        assert memory.rebuild(everything=False).total == 2  # ...for `memdir rebuild --missing-only` (and the built-in skill)
        assert memory.read("fact/paris").embedded
    with Memory.open(settings) as memory:
        write_fact(memory, "rome", "Rome is the capital of Italy.")
    # a server (background model) catches up by itself
    with Memory.open(Settings(root=tmp_path / "m"), embedder=FakeEmbedder(), background=True) as memory:
        assert memory.read("fact/rome").embedded
        assert memory.status().embedded == 2  # the built-in skill apart


def test_close_waits_for_the_background_model_and_stops_its_backlog(tmp_path):
    """A server closed while its model loads must not exit under a running loader (onnxruntime aborts)."""
    root = tmp_path / "m"
    with Memory.open(Settings(root=root, embeddings_enabled=False)) as memory:
        for i in range(3):
            write_fact(memory, f"f{i}", f"Fact number {i}.")
    loaded = []

    def slow_loader():
        time.sleep(0.3)
        loaded.append(True)
        return FakeEmbedder()

    memory = Memory.open(Settings(root=root, embed_batch_size=1), model=ModelProvider(slow_loader))
    memory.model.start_background()
    memory.close()
    assert loaded and not memory.model._thread.is_alive()
    assert memory.model.closing


def test_two_instances_on_one_root_see_each_others_writes(settings):
    with Memory.open(settings, embedder=FakeEmbedder()) as first, Memory.open(settings, embedder=FakeEmbedder()) as second:
        write_fact(first, "paris", "Paris is the capital of France.")
        assert [r.path for r in second.search("Paris capital")] == ["fact/paris.md"]
        second.delete("fact/paris")
        assert first.search("Paris capital") == []


@pytest.mark.directory_store  # reads or edits the files
def test_files_edited_by_hand_are_picked_up_at_open(settings, memory):
    write_fact(memory, "paris", "Paris is the capital of France.")
    memory.close()
    md = settings.store_root / "fact" / "paris.md"
    time.sleep(0.01)
    md.write_text("Lyon is famous for its food.")
    with Memory.open(settings, embedder=FakeEmbedder()) as reopened:
        assert reopened.search("Lyon food")[0].path == "fact/paris.md"
        assert reopened.search("capital France") == [] or reopened.search("capital France")[0].breakdown.bm25 == 0
        assert reopened.index.needs_embedding("fake/bow-384") == []  # re-embedded at open


@pytest.mark.directory_store  # reads or edits the files
def test_deleting_the_derived_data_loses_nothing(settings, memory):
    write_fact(memory, "paris", "Paris is the capital of France.", tags=["geo"])
    memory.close()
    shutil.rmtree(settings.store_root / ".memdir")
    with Memory.open(settings, embedder=FakeEmbedder()) as reopened:
        result = reopened.search("capital of France")[0]
        assert result.path == "fact/paris.md" and result.mode == "hybrid"
        assert reopened.read("fact/paris").metadata.tags == ["geo"]


def test_rebuild_re_embeds_everything(memory):
    for i in range(5):
        write_fact(memory, f"f{i}", f"fact number {i}")
    calls: list[tuple[int, int]] = []
    assert memory.rebuild(progress=lambda done, total: calls.append((done, total))).total == 5
    assert calls[-1] == (5, 5)


def test_rebuild_in_many_chunks_embeds_each_entry_once(tmp_path):
    """The rebuild pipeline (model on one chunk while the previous one is stored) loses and repeats nothing."""
    embedder = FakeEmbedder()
    with Memory.open(Settings(root=tmp_path / "m", embed_batch_size=1), embedder=embedder) as memory:
        for i in range(10):
            write_fact(memory, f"f{i}", "word " * (i + 1))  # sizes differ: chunks follow them
        embedder.texts_embedded = 0
        calls: list[tuple[int, int]] = []
        # the total is known before the first chunk (a progress bar shows it from the start), and the
        # bar moves with every model batch (one entry here), not with every chunk of four batches
        assert memory.rebuild(progress=lambda done, total: calls.append((done, total))).total == 10
        assert embedder.texts_embedded == 10 and calls == [(done, 10) for done in range(11)]
        assert memory.index.needs_embedding(embedder.model_id) == []
        assert memory.read("fact/f9").embedded


def test_reembedding_keeps_updated_at_and_hits(memory):
    written = write_fact(memory, "paris", "Paris is the capital of France.").entry
    memory.read("fact/paris", count_hit=True)
    memory.rebuild()
    entry = memory.read("fact/paris")
    assert entry.updated_at == written.updated_at and entry.hits == 1


def _writer(root: str, worker: int, count: int) -> None:
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        for i in range(count):
            memory.write(f"fact/w{worker}/e{i}", f"worker {worker} entry {i}", title=f"W{worker} E{i}", metadata={"type": "fact"})


@pytest.mark.slow
def test_processes_writing_at_once_lose_nothing_in_files_or_index(tmp_path):
    root = tmp_path / "shared"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(str(root), w, 50)) for w in range(5)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(120)
        assert process.exitcode == 0
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        assert len(memory.list(include_virtual=False)) == 250
        status = memory.status()
        assert status.entries == 250 and status.embedded == 250 and status.builtins == 1
        assert memory.search("worker 3 entry 49", top_k=1)[0].path == "fact/w3/e49.md"


def _read_and_edit(root: str, worker: int, rounds: int) -> None:
    """Counted reads of one shared entry, and compare-and-swap appends to another (retried when stale)."""
    from memdir.core.errors import StaleEditError

    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        for n in range(rounds):
            memory.read("fact/shared", count_hit=True)
            while True:
                current = memory.read("fact/log").content
                try:
                    memory.write("fact/log", current + f" w{worker}n{n}", title="Log", expected_content=current)
                    break
                except StaleEditError:
                    continue


@pytest.mark.slow
def test_processes_reading_and_editing_one_entry_lose_no_hit_and_no_edit(tmp_path):
    root = tmp_path / "shared"
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        memory.write("fact/shared", "Read by everyone.", title="Shared")
        memory.write("fact/log", "log:", title="Log")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_read_and_edit, args=(str(root), w, 15)) for w in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(240)
        assert process.exitcode == 0
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        assert memory.read("fact/shared").hits == 60
        appended = memory.read("fact/log").content.split()[1:]
        assert sorted(appended) == sorted(f"w{w}n{n}" for w in range(4) for n in range(15))


def _overwrite_forever(root: str, started: str) -> None:
    with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
        version = 0
        while True:
            version += 1
            memory.write("fact/counter", f"version {version} " + "x" * 20000, title=f"v{version}", metadata={"type": "fact"})
            if version == 1:
                open(started, "w").close()


@pytest.mark.slow
def test_a_writer_killed_mid_write_leaves_one_whole_version_and_the_index_recovers(tmp_path):
    root = tmp_path / "killed"
    context = multiprocessing.get_context("spawn")
    for round_ in range(4):
        started = tmp_path / f"started-{round_}"
        process = context.Process(target=_overwrite_forever, args=(str(root), str(started)))
        process.start()
        deadline = time.monotonic() + 120
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # a loaded machine may take seconds to start the child: kill it mid-writes, not before
        time.sleep(1.0 + 0.17 * round_)
        os.kill(process.pid, signal.SIGKILL)
        process.join()
        with Memory.open(Settings(root=root), embedder=FakeEmbedder()) as memory:
            entry = memory.read("fact/counter")
            version = entry.content.split()[1]
            assert entry.title == f"v{version}"
            hit = memory.search(f"version {version}", top_k=1)
            assert hit and hit[0].path == "fact/counter.md" and hit[0].title == f"v{version}"


def test_compare_and_swap_write_refuses_a_changed_entry(memory):
    from memdir.core.errors import StaleEditError

    write_fact(memory, "paris", "Paris is the capital of France.")
    write_fact(memory, "paris", "Changed by someone else.")
    with pytest.raises(StaleEditError):
        memory.write("fact/paris", "My edit", title="Paris", metadata={"type": "fact"},
                     expected_content="Paris is the capital of France.")
    assert memory.read("fact/paris").content == "Changed by someone else."


def test_built_in_skills_are_searchable(memory):
    results = memory.search("learn a topic deeply", types=["skill"])
    assert "skill/meta/deep-learning.md" in [r.path for r in results]
    assert memory.index.needs_embedding("fake/bow-384") == []


def test_maintenance_writes_can_keep_age_and_hits(memory):
    from datetime import datetime

    old = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    write_fact(memory, "paris", "Paris is the capital of France.")
    memory.write("fact/paris", "Paris is the capital of France.", title="Paris",
                 metadata={"type": "fact", "related": ["memory://fact/lyon.md"]}, updated_at=old, hits=7)
    entry = memory.read("fact/paris")
    assert (entry.updated_at, entry.hits, entry.metadata.related) == (old, 7, ["memory://fact/lyon.md"])


def test_reads_through_a_stub_are_counted_on_the_stub(memory):
    write_fact(memory, "old", "Old wording of the fact.")
    write_fact(memory, "new", "New wording of the fact.")
    memory.write_stub("fact/old", "fact/new", "merged")
    assert memory.read("fact/old", count_hit=True).path == "fact/new.md"
    memory.read("fact/old", count_hit=True)
    memory.read("fact/old")  # internal reads are not counted
    [stub] = memory.list_stubs()
    assert (stub.path, stub.hits) == ("fact/old.md", 2)
    assert memory.redirect_of("fact/old").target == "fact/new.md"
    assert memory.read("fact/new").hits == 2


def test_cleanup_keeps_stubs_that_are_still_read(memory):
    from datetime import datetime, timedelta

    from memdir.optimization.defragmenter import Defragmenter

    for name in ("a", "b", "keep", "drop"):
        write_fact(memory, name, f"Entry {name}.")
    memory.write_stub("fact/keep", "fact/a", "merged")
    memory.write_stub("fact/drop", "fact/b", "merged")
    for _ in range(5):
        memory.read("fact/keep", count_hit=True)
    later = datetime.now(UTC) + timedelta(days=60)
    report = Defragmenter(memory, now=later).run("cleanup_stubs", dry_run=False)
    assert [info.path for info in memory.list_stubs()] == ["fact/keep.md"], report.markdown


def test_grep_reads_contents_in_one_pass_including_built_ins(memory):
    write_fact(memory, "paris", "Paris is the capital of France.")
    assert memory.adapter.read_contents(["fact/paris.md", "fact/gone.md"]) == ["Paris is the capital of France.", ""]
    assert [hit.path for hit in memory.grep("capital")] == ["fact/paris.md"]
    assert "skill/meta/deep-learning.md" in [hit.path for hit in memory.grep("(?i)protocol")]


@pytest.mark.parametrize("content", ["# moved to Berlin in 2020\n\nAlice relocated.", "# merged → fact/zzz.md\n\nTwo teams merged."])
def test_a_written_entry_that_begins_like_a_stub_is_still_an_entry(memory, content):
    """Stubs have no sidecar; an entry written by memdir always has one, so its first line cannot turn it into a stub."""
    write_fact(memory, "alice", content)
    assert memory.read("fact/alice", count_hit=True).content == content
    assert memory.read("fact/alice").hits == 1
    assert [info.path for info in memory.list() if info.path.startswith("fact/")] == ["fact/alice.md"]
    assert memory.search("Alice relocated teams merged")[0].path == "fact/alice.md"


@pytest.mark.directory_store  # reads or edits the files
def test_re_embedding_never_overwrites_a_sidecar_it_cannot_read(memory):
    """A .yml someone broke by hand is theirs to fix: a rebuild stores the vector in the .emb alone."""
    write_fact(memory, "paris", "Paris is the capital of France.")
    yml = memory.root / "fact" / "paris.yml"
    broken = "title: [unclosed\nhits: 3\n"
    yml.write_text(broken)
    (memory.root / "fact" / "paris.emb").unlink()
    assert memory.rebuild().total >= 1
    assert yml.read_text() == broken
    assert memory.read("fact/paris").embedded


@pytest.mark.parametrize("prefix", [
    None, "", "/", "**", "concept", "concept/", "concept/ruby", "memory://concept/ruby/", "concept/ruby/classes.md",
    "fact/top.md", "conc", "nowhere/at/all", "experience/episodes", "concept/*", "./concept", "concept//ruby",
])
def test_a_prefix_listing_scans_its_folder_only_and_lists_the_same(memory, prefix):
    """Memory.list(prefix) walks only the prefix's folder (an episode listing walked the whole root)."""
    for path in ("concept/ruby/classes.md", "concept/ruby/deep/more.md", "concept/rust/own.md", "fact/top.md",
                 "experience/episodes/2025/one.md", "skill/git/rebase.md"):
        memory.write(path, f"content of {path}", title=path)
    everything = memory.list()
    keep = path_filter(prefix)
    assert memory.list(prefix) == [info for info in everything if keep(info.path)]
