"""The derived index: rows, vectors, other processes, reconciling with the files, rebuilding."""

from __future__ import annotations

import os
import shutil
import sqlite3

import numpy as np
import pytest
from fakes import FakeEmbedder

from memdir.core.entry import Entry, Metadata
from memdir.embeddings.text import searchable_text, text_hash
from memdir.storage.base import committed
from memdir.storage.directory import index as index_module
from memdir.storage.directory import index_db
from memdir.storage.directory.filesystem import FilesystemAdapter
from memdir.storage.directory.index import DerivedIndex, FileStats, listing
from memdir.storage.directory.index_db import file_stats
from memdir.storage.directory.vectors import VectorMatrix
from memdir.storage.sidecar import fallback_title

EMBEDDER = FakeEmbedder()
MODEL = EMBEDDER.model_id


def card(entry: Entry) -> str:
    return searchable_text(entry.title, entry.metadata, entry.content)


def hash_of(entry: Entry) -> str:
    return text_hash(card(entry))


def make(path, content, *, title="", tags=(), type="concept", embed=True) -> Entry:
    meta = Metadata(type=type, tags=list(tags))
    entry = Entry(path=path, content=content, title=title, metadata=meta)
    if embed:
        entry = entry.model_copy(update={"embedding": EMBEDDER.embed([card(entry)])[0]})
    return entry


def put(index: DerivedIndex, entry: Entry, model: str | None = MODEL) -> None:
    model_id = model if entry.embedding is not None else None
    index.upsert(entry, FileStats(1, len(entry.content), 1, 1), hash_of(entry), model_id)


@pytest.fixture
def root(tmp_path):
    return tmp_path / "memory"


# ---------------------------------------------------------------- basics


def test_new_index_uses_wal_and_records_its_schema(root):
    index = DerivedIndex(root)
    assert index.rebuilt
    assert (root / ".memdir" / "index.sqlite3").is_file()
    assert index.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert index.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(index_db.SCHEMA_VERSION)
    index.close()
    assert not DerivedIndex(root).rebuilt


def test_upsert_then_keyword_search_and_vectors(root):
    index = DerivedIndex(root)
    put(index, make("concept/ruby/classes.md", "Classes are blueprints for objects", title="Ruby classes",
                    tags=["ruby"]))
    put(index, make("fact/python.md", "Python uses indentation", title="Python", type="fact"))
    assert len(index) == 2 and len(index.vectors) == 2
    hits = index.keyword_search(["classes"])
    assert [path for path, _ in hits] == ["concept/ruby/classes.md"]
    assert hits[0][1] > 0
    # porter stemming: "blueprint" finds "blueprints"
    assert index.keyword_search(["blueprint"])[0][0] == "concept/ruby/classes.md"
    # the real Porter stemmer (as FTS5's): "connection" finds "connected", "happiness" finds "happy"
    put(index, make("fact/net.md", "The servers were connected. Happiness.", type="fact"))
    assert [p for p, _ in index.keyword_search(["connection"])] == ["fact/net.md"]
    assert [p for p, _ in index.keyword_search(["happy"])] == ["fact/net.md"]
    # replacing an entry replaces its text
    put(index, make("concept/ruby/classes.md", "Modules mix in behaviour", title="Ruby modules"))
    assert index.keyword_search(["classes"]) == []
    assert len(index) == 3


def test_candidates_neighbours_and_cosines_of_a_search(root):
    """What a search reads of its candidates: unknown paths dropped, the words each holds, the entries
    written around each in its folder (nearest last before, first after), each one's cosine."""
    index = DerivedIndex(root)
    turns = ["moving from Sweden", "friends for four years", "a dog named Rex", "moving to the coast"]
    for i, text in enumerate(turns):
        put(index, make(f"conversation/one/turn{i}.md", text, tags=["Caroline"]))
    put(index, make("conversation/two/turn0.md", "moving house in four days"))
    wanted = ["conversation/one/turn1.md", "concept/gone.md", "conversation/two/turn0.md"]
    vector = EMBEDDER.embed(["moving four years"])[0]
    with index.reading():
        found = index.candidates(index.keys_of(wanted), ["move", "four", "rex"])
        owner, keys = index.neighbours(found.keys, 2)
        held = index.holding(["move", "rex"], keys)
        hits = index.semantic_hits(vector, MODEL, 2)
        cosines = hits.cosines([*found.keys, *index.keys_of(["concept/gone.md"])])
    assert list(found.paths) == ["conversation/one/turn1.md", "conversation/two/turn0.md"]
    assert list(found.types) == ["concept", "concept"] and found.tags == [("Caroline",), ()]
    assert {term: held.tolist() for term, held in found.contains.items()} == {
        "move": [False, True], "four": [True, True], "rex": [False, False]}
    slot = index.keywords.slot_of
    assert owner.tolist() == [0, 0, 0]  # the other folder's entry has no neighbour
    assert keys.tolist() == [slot(f"conversation/one/turn{i}.md") for i in (0, 2, 3)]
    assert held["move"].tolist() == [True, False, True] and held["rex"].tolist() == [False, True, False]
    scores = [float(np.dot(vector, index.vectors.vector(path))) for path in found.paths]
    assert cosines.tolist() == pytest.approx([*scores, 0.0])


def test_which_entries_hold_each_word_in_any_order_after_updates_and_removals(root):
    """`holding` answers for slots asked in any order and repeated, for entries written after the
    index was built (their postings kept apart), for the replaced and removed entries' old slots
    (they hold nothing a search can use, but what they held), and for a word no entry holds; two
    entries' equal tags are one string."""
    first = DerivedIndex(root)
    for i, text in enumerate(["otter river", "river stone", "stone otter", "maple"]):
        put(first, make(f"concept/e{i}.md", text, tags=["Water", f"t{i}"]))
    first.close()
    index = DerivedIndex(root)  # (opened on them: their postings built in one array)
    put(index, make("concept/e4.md", "otter maple", tags=["Water"]))  # added after the build
    put(index, make("concept/e1.md", "maple only"))  # replaced: a new slot
    index.remove("concept/e2.md")
    kw = index.keywords
    slots = np.array([kw.slot_of("concept/e4.md"), 2, 0, 1, kw.slot_of("concept/e1.md"), 0, 3], dtype=np.int64)
    held = kw.holding(["otter", "river", "mapl", "absent"], slots)
    assert {term: found.tolist() for term, found in held.items()} == {
        "otter": [True, True, True, False, False, True, False],
        "river": [False, False, True, True, False, True, False],
        "mapl": [True, False, False, False, True, False, True],
        "absent": [False] * 7,
    }
    with pytest.raises(ValueError, match="not a slot"):
        kw.holding(["otter"], np.array([len(kw.paths)]))
    first, added = kw.tags_of(0), kw.tags_of(kw.slot_of("concept/e4.md"))
    assert first == ("Water", "t0") and added == ("Water",) and first[0] is added[0]


def test_searches_meet_each_entry_on_both_sides_after_every_kind_of_change(root, monkeypatch):
    """A search joins the vector matrix's rows and the keyword index's slots by number, not by path:
    after updates, removals, re-embedding, compactions that renumber every slot and another process's
    changes, each result has its own cosine and BM25, as an index opened afresh gives them; and the
    candidates' neighbours found with them (``context_window``) are those found apart."""
    from memdir.search.hybrid import HybridSearcher
    from memdir.storage.directory import postings

    monkeypatch.setattr(postings, "_COMPACT_MIN", 4)  # compact (renumber the slots) every few changes
    words = ["otter", "river", "stone", "maple", "harbour", "lantern", "copper", "meadow"]

    def entry(i: int, round_: int) -> Entry:
        text = " ".join(words[(i * 3 + k + round_) % len(words)] for k in range(4))
        return make(f"concept/{['a', 'b'][i % 2]}/e{i}.md", f"{text} {round_}", title=words[i % len(words)],
                    tags=[words[(i + round_) % len(words)]])

    index, other = DerivedIndex(root, context_window=3), DerivedIndex(root)
    for i in range(40):
        put(index, entry(i, 0))
    for i in range(0, 40, 3):
        put(index, entry(i, 1))  # an update: a new slot, the same row
    for i in range(1, 40, 7):
        index.remove(f"concept/{['a', 'b'][i % 2]}/e{i}.md")  # the matrix's last row moves into the hole
    again = [entry(i, 1) for i in range(0, 40, 3) if i % 7 != 1]
    index.set_vectors([(e.model_copy(update={"embedding": EMBEDDER.embed([words[0]])[0]}), FileStats(1, 1, 1, 1),
                        hash_of(e), MODEL) for e in again[:5]])
    for i in range(40, 50):
        put(other, entry(i, 2))  # seen by ``index`` through its refresh
    index.refresh()
    fresh = DerivedIndex(root)
    queries = [" ".join(words[k:k + 2]) for k in range(len(words) - 1)]
    for query in queries:
        vector = EMBEDDER.embed([query])[0]
        found, expected = (
            [(r.path, r.score, r.breakdown) for r in HybridSearcher(ix).search(query, top_k=60, query_vector=vector,
                                                                           query_model=MODEL)]
            for ix in (index, fresh))
        assert found == expected, query
        assert len(found) > 10
    with index.reading():
        found = index.candidates(index.keys_of([f"concept/a/e{i}.md" for i in range(0, 50, 4)]), ["otter", "stone"])
        put(index, entry(60, 3))  # a change between a search's steps: what was found with the candidates is stale
        owner, near = index.neighbours(found.keys, 3)
        held = index.holding(["otter"], near)
        alone = index.keywords.neighbours(np.asarray(found.keys), 3)
    assert owner.tolist() == alone[0].tolist() and near.tolist() == alone[1].tolist()
    assert held["otter"].tolist() == index.keywords.holding(["otter"], near)["otter"].tolist()


def test_neighbours_follow_writes_made_between_searches(root):
    """The entries written around each candidate, asked before and after entries are added to,
    updated in and removed from the folders, are those an index opened afresh finds."""
    index = DerivedIndex(root, context_window=2)

    def around(ix: DerivedIndex) -> dict[str, list[str]]:
        paths = sorted({path for path in ix.keywords.paths if path in ix.keywords})  # (dead slots keep their paths)
        owner, near = ix.keywords.neighbours(ix.keywords.slots_of(paths), 2)
        found: dict[str, list[str]] = {path: [] for path in paths}
        for at, slot in zip(owner.tolist(), near.tolist()):
            found[paths[at]].append(ix.keywords.paths[slot])
        return found

    for i in range(6):
        put(index, make(f"talk/{'ab'[i % 2]}/t{i}.md", f"turn {i}"))
    changes = [lambda: put(index, make("talk/a/t6.md", "turn 6")), lambda: put(index, make("talk/a/t2.md", "turn 2 again")),
               lambda: index.remove("talk/b/t3.md"), lambda: put(index, make("talk/b/t7.md", "turn 7"))]
    for change in changes:
        around(index)  # (a search before the change)
        change()
        assert around(index) == around(DerivedIndex(root, context_window=2))
    assert around(index)["talk/a/t2.md"] == ["talk/a/t0.md", "talk/a/t4.md", "talk/a/t6.md"]

def test_keyword_filters_run_in_sql(root):
    index = DerivedIndex(root)
    put(index, make("concept/a/x.md", "shared word apple", tags=["Fruit"]))
    put(index, make("fact/b/y.md", "shared word apple", type="fact"))
    put(index, make("concept/ab/z.md", "shared word apple"))
    assert {p for p, _ in index.keyword_search(["apple"], types=["fact"])} == {"fact/b/y.md"}
    assert {p for p, _ in index.keyword_search(["apple"], path_prefix="concept/a/")} == {"concept/a/x.md"}
    assert {p for p, _ in index.keyword_search(["apple"], path_prefix="concept/ab/z.md")} == {"concept/ab/z.md"}
    assert {p for p, _ in index.keyword_search(["apple"], tags=["fruit"])} == {"concept/a/x.md"}
    assert index.keyword_search(["apple"], types=[]) == []


def test_tags_are_read_alike_for_a_few_entries_and_for_a_whole_listing(root):
    index = DerivedIndex(root)
    for i in range(30):
        put(index, make(f"concept/t/e{i}.md", f"entry {i}", tags=[f"tag{i % 3}", "Shared"] if i % 5 else []))
    expected = {f"concept/t/e{i}.md": (f"tag{i % 3}", "Shared") if i % 5 else () for i in range(30)}
    assert index.tags(["concept/t/e1.md", "concept/t/e5.md", "concept/gone.md"]) == {  # looked up by path
        "concept/t/e1.md": ("tag1", "Shared"), "concept/t/e5.md": ()}
    assert index.tags([*expected, "concept/gone.md"]) == expected  # every row read in order
    assert DerivedIndex(root / "empty").tags(["concept/gone.md"]) == {}
    index.close()


def test_entry_without_vector_is_indexed_for_keywords_only(root):
    index = DerivedIndex(root)
    put(index, make("concept/plain.md", "no vector here", embed=False))
    assert len(index.vectors) == 0
    assert index.keyword_search(["vector"])[0][0] == "concept/plain.md"
    assert index.needs_embedding(MODEL) == ["concept/plain.md"]


def test_stub_rows_are_not_searchable(root):
    index = DerivedIndex(root)
    stub = make("concept/old.md", "# merged → concept/new.md\n\nThis entry was merged into concept/new.md\n")
    index.upsert(stub, FileStats(1, len(stub.content)), hash_of(stub), MODEL)  # a stub: no .yml
    assert index.keyword_search(["merged"]) == []
    assert len(index.vectors) == 0 and len(index) == 0


def test_an_entry_with_a_sidecar_is_searchable_whatever_its_first_line(root):
    index = DerivedIndex(root)
    put(index, make("fact/alice.md", "# moved → Berlin in 2020\n\nAlice relocated.\n"))
    assert [hit[0] for hit in index.keyword_search(["berlin"])] == ["fact/alice.md"]


def test_remove(root):
    index = DerivedIndex(root)
    put(index, make("concept/a.md", "alpha"))
    assert index.remove("concept/a.md")
    assert not index.remove("concept/a.md")
    assert len(index) == 0 and len(index.vectors) == 0
    assert index.keyword_search(["alpha"]) == []


def test_the_in_memory_indexes_change_only_under_the_lock_searches_take(root, monkeypatch):
    """A search on a server's reading thread holds the index's lock while it reads the keyword index
    and the matrix; a write, delete, re-embedding, clear or reconcile on the writer's thread changes
    them under that lock too, never between its commit and its return (a search there read a posting
    of a slot the BM25 lengths did not have yet: IndexError)."""
    adapter = FilesystemAdapter(root)
    index = DerivedIndex(root)
    unlocked: list[str] = []
    for owner, names in ((index.keywords, ("add", "remove", "load")), (index.vectors, ("upsert", "remove", "clear"))):
        for name in names:
            real = getattr(owner, name)

            def checked(*args, _real=real, _name=name, **kwargs):
                if not index.lock._is_owned():
                    unlocked.append(_name)
                return _real(*args, **kwargs)

            monkeypatch.setattr(owner, name, checked)
    put(index, make("concept/a.md", "alpha"))
    entry = make("concept/b.md", "beta")
    index.set_vectors([(entry, FileStats(1, 4, 1, 1), hash_of(entry), MODEL)])
    index.remove("concept/a.md")
    write_entry(adapter, "concept/c.md", "gamma")
    reconcile(index, adapter)
    index.clear()
    assert unlocked == []


# ---------------------------------------------------------------- several processes


def test_two_instances_see_each_others_changes_after_refresh(root):
    a, b = DerivedIndex(root), DerivedIndex(root)
    assert not b.refresh()  # nothing happened: one cheap query
    put(a, make("concept/one.md", "first entry"))
    put(a, make("concept/two.md", "second entry"))
    assert len(b.vectors) == 0
    assert b.refresh()
    assert set(b.vectors.paths) == {"concept/one.md", "concept/two.md"}
    np.testing.assert_allclose(b.vectors.vector("concept/one.md"), a.vectors.vector("concept/one.md"))
    assert not b.refresh()
    # b writes too; a catches up, including b's removal of a's entry
    put(b, make("concept/three.md", "third entry"))
    b.remove("concept/one.md")
    assert a.refresh()
    assert set(a.vectors.paths) == {"concept/two.md", "concept/three.md"}
    # an update without a vector drops it from the other's matrix
    put(a, make("concept/two.md", "now unembedded", embed=False))
    b.refresh()
    assert "concept/two.md" not in b.vectors


def test_writer_catches_up_before_writing_so_nothing_is_skipped(root):
    a, b = DerivedIndex(root), DerivedIndex(root)
    put(a, make("concept/from-a.md", "alpha"))
    put(b, make("concept/from-b.md", "beta"))  # b never refreshed, but its write catches up first
    assert set(b.vectors.paths) == {"concept/from-a.md", "concept/from-b.md"}
    assert not b.refresh()
    assert a.refresh() and set(a.vectors.paths) == set(b.vectors.paths)


def test_lagging_instance_reloads_when_tombstones_were_pruned(root, monkeypatch):
    monkeypatch.setattr(index_module, "TOMBSTONES_KEPT", 2)
    a, b = DerivedIndex(root), DerivedIndex(root)
    for i in range(6):
        put(a, make(f"concept/e{i}.md", f"entry {i}"))
    b.refresh()
    for i in range(5):
        a.remove(f"concept/e{i}.md")
    a.reconcile([("concept/e5.md", FileStats(1, len("entry 5"), 1, 1))], lambda p: None, hash_of)  # prunes tombstones
    assert a.db.execute("SELECT count(*) FROM tombstones").fetchone()[0] == 2
    assert b.refresh()
    assert list(b.vectors.paths) == ["concept/e5.md"]


def test_cleared_index_makes_others_reload(root):
    a, b = DerivedIndex(root), DerivedIndex(root)
    put(a, make("concept/x.md", "x"))
    b.refresh()
    a.clear()
    put(a, make("concept/y.md", "y"))
    assert b.refresh()
    assert list(b.vectors.paths) == ["concept/y.md"]


def test_replaced_index_file_is_reopened(root):
    a, b = DerivedIndex(root), DerivedIndex(root)
    put(a, make("concept/x.md", "x"))
    b.refresh()
    a.close()
    shutil.rmtree(root / ".memdir")
    c = DerivedIndex(root)  # another process rebuilds it
    assert c.rebuilt
    put(c, make("concept/y.md", "y"))
    assert b.refresh()
    assert list(b.vectors.paths) == ["concept/y.md"]


# ---------------------------------------------------------------- reconcile with the files


def write_entry(adapter: FilesystemAdapter, path: str, content: str, *, title: str = "", tags=(), embed=True) -> Entry:
    meta = Metadata(type="concept", tags=list(tags))
    text = searchable_text(title or fallback_title(content, path), meta, content)  # the title it reads back with
    vector = EMBEDDER.embed([text])[0] if embed else None
    return committed(adapter.write(path, content, title=title, metadata=meta, embedding=vector,
                         embedding_model=MODEL, embedding_text_hash=text_hash(text))).entry  # as Memory.write records them


def reconcile(index: DerivedIndex, adapter: FilesystemAdapter):
    return index.reconcile(listing(adapter), lambda p: adapter.read_entry(p, follow=False), hash_of)


def test_reconcile_builds_from_files_then_only_touches_changes(root):
    adapter = FilesystemAdapter(root)
    write_entry(adapter, "concept/a.md", "apples are red", title="Apples")
    write_entry(adapter, "concept/b.md", "bananas are yellow", title="Bananas")
    write_entry(adapter, "concept/c.md", "cherries are dark", title="Cherries", embed=False)
    index = DerivedIndex(root)
    report = reconcile(index, adapter)
    assert (report.added, report.updated, report.removed, report.rebuilt) == (3, 0, 0, True)
    assert index.needs_embedding(MODEL) == ["concept/c.md"]
    assert set(index.vectors.paths) == {"concept/a.md", "concept/b.md"}

    again = reconcile(index, adapter)
    assert (again.added, again.updated, again.removed, again.unchanged, again.rebuilt) == (0, 0, 0, 3, False)


def test_reconcile_after_external_edit_and_delete(root):
    adapter = FilesystemAdapter(root)
    write_entry(adapter, "concept/a.md", "apples are red", title="Apples")
    write_entry(adapter, "concept/b.md", "bananas are yellow", title="Bananas")
    index = DerivedIndex(root)
    reconcile(index, adapter)
    # someone edits a.md with a text editor (the .emb is now stale) and deletes b's files
    md = root / "concept" / "a.md"
    md.write_text("apples are green and sour")
    os.utime(md, ns=(md.stat().st_atime_ns, md.stat().st_mtime_ns + 1_000_000))
    for suffix in (".md", ".yml", ".emb"):
        (root / "concept" / f"b{suffix}").unlink()
    report = reconcile(index, adapter)
    assert (report.updated, report.removed) == (1, 1)
    assert index.keyword_search(["sour"])[0][0] == "concept/a.md"
    assert index.keyword_search(["bananas"]) == []
    assert "concept/b.md" not in index.vectors
    # the vector was made from the old text: it must be re-embedded
    assert index.needs_embedding(MODEL) == ["concept/a.md"]
    # once re-embedded (written again with a fresh vector), nothing is stale
    entry = write_entry(adapter, "concept/a.md", "apples are green and sour", title="Apples")
    index.upsert(entry, file_stats(root, entry.path), hash_of(entry), MODEL)
    assert index.needs_embedding(MODEL) == []
    assert reconcile(index, adapter).unchanged == 1


def test_model_change_means_re_embedding(root):
    index = DerivedIndex(root)
    put(index, make("concept/a.md", "alpha"))
    put(index, make("concept/b.md", "beta"), model="other/model")
    assert index.needs_embedding(MODEL) == ["concept/b.md"]
    assert index.needs_embedding("other/model") == ["concept/a.md"]
    assert index.needs_embedding(None) == []
    stats = index.stats(MODEL)
    assert (stats.entries, stats.embedded, stats.stale) == (2, 1, 1)


def test_set_vectors_replaces_only_the_vector_and_reaches_other_processes(root):
    index = DerivedIndex(root)
    other = DerivedIndex(root)
    entry = make("concept/a.md", "alpha particles", tags=["physics"])
    put(index, entry, model="old/model")
    terms_before = index.db.execute("SELECT term_ids, counts FROM entry_terms").fetchall()
    new_vector = EMBEDDER.embed(["something else entirely"])[0]
    fresh = entry.model_copy(update={"embedding": new_vector})
    unknown = make("concept/b.md", "beta rays")  # no row yet: gets the full upsert
    assert index.set_vectors([(fresh, FileStats(2, 15, 2, 2), "h1", MODEL), (unknown, FileStats(1, 9, 1, 1), "h2", MODEL)]) == 2
    assert np.allclose(index.vectors.vector("concept/a.md"), new_vector, atol=1e-6)
    assert index.db.execute("SELECT term_ids, counts FROM entry_terms WHERE id = 1").fetchall() == terms_before
    assert index.needs_embedding(MODEL) == []
    assert [p for p, _ in index.keyword_search(["alpha"])] == ["concept/a.md"]
    assert index.vectors.mask(tags=["physics"]).tolist() == [True, False]  # filters still know its tags
    assert other.refresh()
    assert np.allclose(other.vectors.vector("concept/a.md"), new_vector, atol=1e-6)
    assert "concept/b.md" in other.vectors


def test_deleting_dot_memdir_rebuilds_silently(root):
    adapter = FilesystemAdapter(root)
    for i in range(5):
        write_entry(adapter, f"concept/e{i}.md", f"entry number {i}")
    index = DerivedIndex(root)
    reconcile(index, adapter)
    index.close()
    shutil.rmtree(root / ".memdir")
    fresh = DerivedIndex(root)
    assert fresh.rebuilt and len(fresh) == 0
    report = reconcile(fresh, adapter)
    assert report.rebuilt and report.added == 5
    assert len(fresh.vectors) == 5
    assert fresh.needs_embedding(MODEL) == []  # each .yml records its vector's model and text


def test_deleting_dot_memdir_while_open_rebuilds_on_reconcile(root):
    adapter = FilesystemAdapter(root)
    write_entry(adapter, "concept/a.md", "alpha")
    index = DerivedIndex(root)
    reconcile(index, adapter)
    shutil.rmtree(root / ".memdir")
    report = reconcile(index, adapter)
    assert report.rebuilt and report.added == 1
    assert (root / ".memdir" / "index.sqlite3").is_file()


def test_corrupt_index_file_is_rebuilt(root):
    (root / ".memdir").mkdir(parents=True)
    (root / ".memdir" / "index.sqlite3").write_bytes(b"this is not a database" * 100)
    index = DerivedIndex(root)
    assert index.rebuilt and len(index) == 0
    put(index, make("concept/a.md", "alpha"))
    assert len(index) == 1


def test_schema_2_index_is_migrated_to_porter_terms_and_loses_its_fts_copy(root):
    path = root / ".memdir" / "index.sqlite3"
    path.parent.mkdir(parents=True)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    for migration in index_db.MIGRATIONS[:2]:  # the schema a memdir of schema 2 made
        migration(db)
    db.executemany("INSERT INTO meta(key, value) VALUES (?, ?)",
                   [("schema_version", "2"), ("seq", "1"), ("tombstone_floor", "0"), ("generation", "g2")])
    row_id = db.execute(
        "INSERT INTO entries(path, title, type, tags, seq) VALUES ('fact/net.md', 'Net', 'fact', '', 1)"
    ).lastrowid
    db.execute("INSERT INTO entries_fts(rowid, title, tags, domain, content) VALUES (?, 'Net', '', '', ?)",
               (row_id, "The servers were connected"))
    db.close()
    index = DerivedIndex(root)
    assert not index.rebuilt
    assert index.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(
        index_db.SCHEMA_VERSION
    )
    assert {t for (t,) in index.db.execute("SELECT term FROM terms")} == {"net", "server", "connect"}
    assert [p for p, _ in index.keyword_search(["connection"])] == ["fact/net.md"]
    assert index.db.execute("SELECT name FROM sqlite_master WHERE name LIKE 'entries_fts%'").fetchall() == []


def test_schema_4_rows_without_a_type_take_their_folders_type(root):
    index = DerivedIndex(root)
    put(index, make("concept/notes.md", "hand-written notes about ruby", type=None))
    put(index, make("misc/loose.md", "not in a type folder", type=None))
    index.db.execute("UPDATE entries SET type = NULL")  # what schema 4 stored for a note without metadata
    index.db.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    index.close()
    again = DerivedIndex(root)
    assert dict(again.db.execute("SELECT path, type FROM entries")) == {"concept/notes.md": "concept", "misc/loose.md": None}
    assert [path for path, _ in again.keyword_search(["ruby"], types=["concept"])] == ["concept/notes.md"]


def test_index_from_a_newer_memdir_is_rebuilt(root):
    DerivedIndex(root).close()
    db = sqlite3.connect(root / ".memdir" / "index.sqlite3")
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    assert DerivedIndex(root).rebuilt


def test_open_loads_the_matrix(root):
    index = DerivedIndex(root)
    for i in range(20):
        put(index, make(f"concept/e{i}.md", f"entry {i}", tags=[f"t{i % 3}"]))
    index.close()
    again = DerivedIndex(root)
    assert len(again.vectors) == 20
    np.testing.assert_allclose(np.linalg.norm(again.vectors.data, axis=1), 1.0, rtol=1e-5)
    assert again.vectors.mask(tags=["T1"]).sum() == 7


# ---------------------------------------------------------------- the matrix itself


def unit(seed: int, dim: int = 8) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def test_matrix_remove_moves_last_row_and_keeps_filters_right():
    m = VectorMatrix()
    for i in range(300):  # past the first capacity
        m.upsert(f"{'fact' if i % 2 else 'concept'}/f{i % 3}/e{i}.md", unit(i), type="fact" if i % 2 else "concept",
                 tags=[f"t{i % 5}"], model="m")
    assert len(m) == 300
    m.remove("concept/f0/e0.md")
    assert len(m) == 299 and "concept/f0/e0.md" not in m
    moved = m.row_of("fact/f2/e299.md")
    assert moved == 0
    np.testing.assert_allclose(m.vector("fact/f2/e299.md"), unit(299))
    facts = m.mask(types=["fact"])
    assert facts.sum() == 150 and all(m.paths[r].startswith("fact/") for r in np.flatnonzero(facts))
    assert m.mask(tags=["T4"]).sum() == len([i for i in range(1, 300) if i % 5 == 4])
    folder = m.mask(path_prefix="fact/f2/")
    assert all(m.paths[r].startswith("fact/f2/") for r in np.flatnonzero(folder)) and folder.sum() == 50
    assert m.mask(path_prefix="fact/f2/e299.md").sum() == 1
    assert m.mask(model="other").sum() == 0


def top(m: VectorMatrix, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best rows for ``query`` among those ``mask`` keeps: (rows, scores), best first."""
    ranked = m.ranked(query, k, mask)
    return ranked.rows, ranked.cosines(ranked.rows)


def test_matrix_top_respects_the_mask():
    m = VectorMatrix()
    for i in range(50):
        m.upsert(f"concept/e{i}.md", unit(i), type="fact" if i == 7 else "concept")
    rows, scores = top(m, unit(3), 5)
    assert m.paths[rows[0]] == "concept/e3.md" and scores[0] == pytest.approx(1.0)
    assert list(scores) == sorted(scores, reverse=True)
    rows, _ = top(m, unit(3), 5, m.mask(types=["fact"]))
    assert [m.paths[r] for r in rows] == ["concept/e7.md"]


@pytest.mark.parametrize(("rows", "threshold", "split"), [(10_000, None, False), (2_000, 1_000, True)])
def test_only_a_large_scan_is_split_over_the_cpus(monkeypatch, rows, threshold, split):
    """A 10K-row scan stays on the calling thread: on a busy machine a helper would wake later than it ends."""
    from memdir.storage.directory import vectors

    pool = vectors._scan_pool()
    if pool is None:
        pytest.skip("one usable CPU: the scan is never split")
    if threshold is not None:
        monkeypatch.setattr(vectors, "PARALLEL_MIN_ROWS", threshold)
    m = VectorMatrix()
    for i in range(rows):
        m.upsert(f"concept/e{i}.md", unit(i))
    submitted = []
    monkeypatch.setattr(pool, "submit", lambda *args, **kwargs: submitted.append(args) or pool.__class__.submit(pool, *args, **kwargs))
    scores, _ = m.scan(unit(3), 0)
    assert bool(submitted) is split
    assert scores[m.row_of("concept/e3.md")] == pytest.approx(1.0) and len(scores) == rows


def test_a_split_scan_picks_the_same_best_rows(monkeypatch):
    """Each part of a split scan picks its own best rows; together they are the whole scan's, in order,
    with and without a mask."""
    from memdir.storage.directory import vectors

    if vectors._scan_pool() is None:
        pytest.skip("one usable CPU: the scan is never split")
    rng = np.random.default_rng(3)
    m = VectorMatrix()
    for i, vector in enumerate(rng.standard_normal((2_000, 16)).astype(np.float32)):
        m.upsert(f"concept/e{i}.md", vector / np.linalg.norm(vector), type="fact" if i % 3 else "skill")
    query, mask = rng.standard_normal(16).astype(np.float32), m.mask(types=["skill"])
    whole = [top(m, query, 25), top(m, query, 25, mask), top(m, query, 5_000)]
    monkeypatch.setattr(vectors, "PARALLEL_MIN_ROWS", 1_000)
    split = [top(m, query, 25), top(m, query, 25, mask), top(m, query, 5_000)]
    for (rows, scores), (split_rows, split_scores) in zip(whole, split):
        assert rows.tolist() == split_rows.tolist() and scores.tolist() == split_scores.tolist()


@pytest.mark.parametrize("order", ["random", "rising", "falling", "ties"])
def test_the_best_rows_are_those_of_a_full_sort(order):
    """The ``k`` best rows are those of sorting every score, equal scores by row, however the scores
    lie over the rows (a bound guessed from every 16th row lets too few pass when they rise)."""
    rng = np.random.default_rng(5)
    query = unit(1)
    vectors = rng.standard_normal((3_000, 8)).astype(np.float32)
    if order == "ties":
        vectors = vectors[rng.integers(0, 40, len(vectors))]  # 40 distinct vectors, each on ~75 rows
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = vectors @ query
    if order != "random":
        vectors = vectors[np.argsort(cosines if order == "rising" else -cosines, kind="stable")]
    m = VectorMatrix()
    for i, vector in enumerate(vectors):
        m.upsert(f"concept/e{i}.md", vector, type="fact" if i % 3 else "skill")
    mask = m.mask(types=["skill"])
    for k, keep in [(1, None), (50, None), (200, None), (50, mask)]:
        scores, rows = m.scan(query, k, keep)
        allowed = np.arange(len(m)) if keep is None else np.flatnonzero(keep)
        assert rows.tolist() == allowed[np.lexsort((allowed, -scores[allowed]))][:k].tolist()


def test_matrix_switches_dimension_when_the_model_does():
    m = VectorMatrix()
    m.upsert("a.md", unit(1, 8))
    m.upsert("b.md", unit(2, 4))
    assert m.dim == 4 and list(m.paths) == ["b.md"]
    assert len(m.ranked(unit(3, 8), 0).rows) == 0


_WRITER = """
import sys
import numpy as np
from memdir.core.entry import Entry, Metadata
from memdir.storage.directory.index import DerivedIndex, FileStats, listing
from memdir.storage.directory.index_db import file_stats
index = DerivedIndex(sys.argv[1])
vector = np.zeros(384, dtype=np.float32)
vector[7] = 1.0
entry = Entry(path="concept/from-child.md", content="written by another process", metadata=Metadata(type="concept"),
              embedding=vector)
index.upsert(entry, FileStats(1, 1, 1, 1), "h", "fake/bow-384")
index.remove("concept/a.md")
index.close()
"""


@pytest.mark.slow
def test_a_real_second_process(root):
    import subprocess
    import sys

    index = DerivedIndex(root)
    put(index, make("concept/a.md", "alpha"))
    subprocess.run([sys.executable, "-c", _WRITER, str(root)], check=True, timeout=60)
    assert index.refresh()
    assert list(index.vectors.paths) == ["concept/from-child.md"]
    assert index.keyword_search(["process"])[0][0] == "concept/from-child.md"


def test_a_large_reconcile_optimises_the_keyword_index(root, monkeypatch):
    monkeypatch.setattr(index_module, "OPTIMIZE_AFTER_CHANGES", 2)
    calls = []
    monkeypatch.setattr(DerivedIndex, "optimize", lambda self: calls.append(self))
    adapter = FilesystemAdapter(root)
    for i in range(3):
        write_entry(adapter, f"concept/e{i}.md", f"entry {i}")
    index = DerivedIndex(root)
    reconcile(index, adapter)
    assert len(calls) == 1
    reconcile(index, adapter)  # nothing changed: no optimise
    assert len(calls) == 1


def test_optimize_keeps_results(root):
    index = DerivedIndex(root)
    for i in range(30):
        put(index, make(f"concept/e{i}.md", f"entry number {i} about apples" if i % 3 == 0 else f"entry {i}"))
    before = index.keyword_search(["apples"])
    index.optimize()
    assert index.keyword_search(["apples"]) == before and len(before) == 10


def test_keyword_index_stays_right_through_updates_removals_and_compaction(root, monkeypatch):
    from memdir.storage.directory import postings

    monkeypatch.setattr(postings, "_COMPACT_MIN", 4)
    index = DerivedIndex(root)
    for i in range(12):
        put(index, make(f"concept/e{i}.md", f"apples and pears {i}" if i % 2 else f"plums {i}", tags=[f"t{i % 3}"]))
    for i in range(0, 12, 3):
        put(index, make(f"concept/e{i}.md", f"apples again {i}", tags=["fresh"]))
    index.remove("concept/e1.md")
    index.remove("concept/e5.md")
    live = index.keyword_search(["apples"], limit=100)
    assert index.keywords._dead < 6  # compacted on the way
    again = DerivedIndex(root)  # built from SQLite at open
    assert [p for p, _ in again.keyword_search(["apples"], limit=100)] == [p for p, _ in live]
    np.testing.assert_allclose([s for _, s in again.keyword_search(["apples"], limit=100)], [s for _, s in live], rtol=1e-5)
    assert {p for p, _ in live} == {f"concept/e{i}.md" for i in (0, 3, 6, 7, 9, 11)}
    assert {p for p, _ in index.keyword_search(["apples"], tags=["fresh"])} == {f"concept/e{i}.md" for i in (0, 3, 6, 9)}


# ---------------------------------------------------------------- the vector snapshot


def matrix_of(index: DerivedIndex) -> dict[str, tuple[bytes, str | None]]:
    """path -> (vector bytes, model) of every row of the in-memory matrix."""
    return {path: (index.vectors.vector(path).tobytes(), index.vectors.model_of(path)) for path in index.vectors.paths}


@pytest.fixture
def small_snapshots(monkeypatch):
    monkeypatch.setattr(index_module.snapshots, "MIN_ROWS", 3)
    return monkeypatch


def test_a_snapshot_is_written_after_a_full_load_and_used_when_nothing_changed(root, small_snapshots):
    index = DerivedIndex(root)
    for i in range(6):
        put(index, make(f"concept/e{i}.md", f"entry number {i}"))
    snapshot = index_module.snapshots.snapshot_path(index.path)
    assert not snapshot.exists()  # writes alone never write it
    expected = matrix_of(index)
    index.close()
    reopened = DerivedIndex(root)  # a full load of >= MIN_ROWS vectors writes it
    assert snapshot.is_file() and matrix_of(reopened) == expected
    reopened.close()
    read = []
    small_snapshots.setattr(index_module.snapshots, "read_snapshot", lambda path, real=index_module.snapshots.read_snapshot: read.append(path) or real(path))
    third = DerivedIndex(root)
    assert read and matrix_of(third) == expected
    assert [p for p, _ in third.keyword_search(["number"])]  # the keyword side is loaded as always


def test_a_snapshot_plus_later_changes_equals_a_full_load(root, small_snapshots):
    index = DerivedIndex(root)
    for i in range(6):
        put(index, make(f"concept/e{i}.md", f"entry number {i}"))
    index.close()
    DerivedIndex(root).close()  # writes the snapshot
    other = DerivedIndex(root)
    put(other, make("concept/e1.md", "rewritten entirely"))  # a changed vector
    put(other, make("concept/e2.md", "no vector now", embed=False))  # lost its vector
    other.remove("concept/e3.md")  # gone
    put(other, make("concept/new.md", "a newcomer"), model="other/model")  # new, another model
    other.close()
    with_snapshot = matrix_of(DerivedIndex(root))
    index_module.snapshots.snapshot_path(index.path).unlink()
    small_snapshots.setattr(index_module.snapshots, "MIN_ROWS", 10**9)
    full = matrix_of(DerivedIndex(root))
    assert with_snapshot == full
    assert "concept/e2.md" not in full and "concept/e3.md" not in full and full["concept/new.md"][1] == "other/model"


def test_an_unusable_snapshot_is_ignored(root, small_snapshots, caplog):
    index = DerivedIndex(root)
    for i in range(4):
        put(index, make(f"concept/e{i}.md", f"entry number {i}"))
    expected = matrix_of(index)
    index.close()
    DerivedIndex(root).close()
    snapshot = index_module.snapshots.snapshot_path(index.path)
    data = snapshot.read_bytes()
    snapshot.write_bytes(data[:-10])  # cut short
    assert matrix_of(DerivedIndex(root)) == expected
    assert "ignoring the vector snapshot" in caplog.text
    snapshot.write_bytes(b"not a snapshot at all")
    assert matrix_of(DerivedIndex(root)) == expected


def test_a_snapshot_of_a_cleared_index_is_ignored(root, small_snapshots):
    index = DerivedIndex(root)
    for i in range(4):
        put(index, make(f"concept/e{i}.md", f"entry number {i}"))
    index.close()
    DerivedIndex(root).close()  # snapshot of this generation
    old = index_module.snapshots.read_snapshot(index_module.snapshots.snapshot_path(index.path))
    cleared = DerivedIndex(root)
    cleared.clear()
    put(cleared, make("concept/only.md", "the only entry"))
    cleared.close()
    assert list(DerivedIndex(root).vectors.paths) == ["concept/only.md"]
    assert old is not None and old.generation != DerivedIndex(root)._generation


def test_schema_4_index_learns_the_links_at_the_next_open(tmp_path):
    """Schema 6 records who links to whom; an index made before it re-reads every entry once to learn it."""
    from memdir.core.settings import Settings
    from memdir.memory import Memory

    settings = Settings(root=tmp_path / "memory")
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        memory.write("fact/a.md", "A.", title="A")
        memory.write("fact/b.md", "B links to A.", title="B", metadata={"related": ["memory://fact/a.md"]})
        assert memory.index.linking_to("fact/a.md") == ["fact/b.md"]
    db = sqlite3.connect(index_db.index_path(settings.storage.root), isolation_level=None)
    db.execute("DROP TABLE links")
    db.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    db.close()
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        assert not memory.index.rebuilt
        assert memory.index.linking_to("fact/a.md") == ["fact/b.md"]


def test_a_split_scan_needs_no_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    """A split scan ends with every row compared and the same best rows when no helper thread ever
    starts (the caller claims every part itself)."""
    from memdir.storage.directory import vectors

    pool = vectors._scan_pool()
    if pool is None:
        pytest.skip("one usable CPU: the scan is never split")
    rng = np.random.default_rng(4)
    m = VectorMatrix()
    for i, vector in enumerate(rng.standard_normal((2_000, 16)).astype(np.float32)):
        m.upsert(f"concept/e{i}.md", vector / np.linalg.norm(vector))
    query = rng.standard_normal(16).astype(np.float32)
    whole = top(m, query, 25)
    monkeypatch.setattr(vectors, "PARALLEL_MIN_ROWS", 1_000)
    monkeypatch.setattr(pool, "submit", lambda *args, **kwargs: None)  # helpers that never wake
    scores, rows = m.scan(query, 25)
    assert len(scores) == len(m)
    assert rows.tolist() == whole[0].tolist() and scores[rows].tolist() == whole[1].tolist()
