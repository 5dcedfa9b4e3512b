"""Context coverage: the query words an entry lacks that the entries written around it in its folder hold."""

from __future__ import annotations

import numpy as np
import pytest
from test_hybrid_search import EMBEDDER, add

from memdir.core.settings import Settings
from memdir.search.hybrid import HybridSearcher
from memdir.storage.directory.index import DerivedIndex
from memdir.storage.directory.postings import KeywordDoc, KeywordIndex


def neighbours(index: DerivedIndex, path: str, window: int) -> list[str]:
    kw = index.keywords
    with index.lock:
        owner, found = kw.neighbours([kw.slot_of(path)], window)
    assert (owner == 0).all()
    return [kw.paths[slot] for slot in found.tolist()]


def conversation(index: DerivedIndex) -> None:
    """A session of five turns, written in order, and an unrelated note in another folder in between."""
    add(index, "chat/s1/1.md", "Caroline: I moved here four years ago and made friends fast.")
    add(index, "chat/s1/2.md", "Melanie: That is wonderful, friends matter.")
    add(index, "notes/sweden.md", "Sweden is a country in northern Europe.")
    add(index, "chat/s1/3.md", "Caroline: Yes, they helped me since I left my home country.")
    add(index, "chat/s1/4.md", "Melanie: Tell me about the necklace you wear.")
    add(index, "chat/s1/5.md", "Caroline: My grandma gave it to me in Sweden.")


@pytest.fixture
def index(tmp_path):
    index = DerivedIndex(tmp_path / "memory")
    conversation(index)
    yield index
    index.close()


def test_neighbours_are_the_entries_written_around_one_in_its_folder(index):
    assert neighbours(index, "chat/s1/3.md", 1) == ["chat/s1/2.md", "chat/s1/4.md"]
    assert neighbours(index, "chat/s1/3.md", 2) == ["chat/s1/1.md", "chat/s1/2.md", "chat/s1/4.md", "chat/s1/5.md"]
    assert neighbours(index, "chat/s1/1.md", 2) == ["chat/s1/2.md", "chat/s1/3.md"]  # none before the first
    assert neighbours(index, "notes/sweden.md", 3) == []  # alone in its folder
    assert neighbours(index, "chat/s1/3.md", 0) == []


def test_an_update_keeps_an_entrys_place_and_a_delete_leaves_a_gap(index, tmp_path):
    add(index, "chat/s1/2.md", "Melanie: That is wonderful, friends matter a lot.")  # rewritten: still the 2nd turn
    assert neighbours(index, "chat/s1/3.md", 1) == ["chat/s1/2.md", "chat/s1/4.md"]
    index.remove("chat/s1/4.md")
    assert neighbours(index, "chat/s1/3.md", 1) == ["chat/s1/2.md", "chat/s1/5.md"]
    index.close()
    reopened = DerivedIndex(tmp_path / "memory")  # loaded from SQLite: the same order
    try:
        assert neighbours(reopened, "chat/s1/3.md", 1) == ["chat/s1/2.md", "chat/s1/5.md"]
    finally:
        reopened.close()


def _search(index, query, **settings):
    return {r.path: r for r in HybridSearcher(index, Settings(**settings), EMBEDDER).search(query, top_k=10)}


def test_a_neighbour_holding_the_missing_words_raises_an_entry(index):
    query = "Caroline moved from her home country years ago"
    hits = _search(index, query)
    # turn 3 has "home country"; "moved", "years" are in turn 1, within the window
    assert hits["chat/s1/3.md"].breakdown.context > 0
    # nothing in notes/ can lend words to the note, however well the chat covers them
    assert hits.get("notes/sweden.md") is None or hits["notes/sweden.md"].breakdown.context == 0
    assert all(r.breakdown.context == 0 for r in _search(index, query, context_window=0).values())


def test_an_entry_holding_every_query_word_gains_nothing_from_context(index):
    hits = _search(index, "grandma Sweden")
    assert hits["chat/s1/5.md"].breakdown.keyword == pytest.approx(1.0)
    assert hits["chat/s1/5.md"].breakdown.context == 0.0


def test_context_ranks_the_entry_whose_neighbours_complete_the_query_first(tmp_path):
    index = DerivedIndex(tmp_path / "memory")
    try:
        # two entries with the same words; only one was written beside the entry holding the rest of the query
        add(index, "z/1.md", "The release was delayed.")
        add(index, "z/2.md", "Because the database migration locked a table.")
        add(index, "b/1.md", "The release was delayed.")
        add(index, "b/2.md", "Lunch was pizza.")
        query = "why was the release delayed by the database migration"
        ranked = list(_search(index, query))
        assert ranked.index("z/1.md") < ranked.index("b/1.md")
        unaided = list(_search(index, query, context_weight=0.0))  # a tie, broken by path
        assert unaided.index("b/1.md") < unaided.index("z/1.md")
    finally:
        index.close()


def test_another_process_sees_the_same_neighbours_after_a_refresh(tmp_path):
    writer, reader = DerivedIndex(tmp_path / "memory"), DerivedIndex(tmp_path / "memory")
    try:
        conversation(writer)
        add(writer, "chat/s1/2.md", "Melanie: That is wonderful, friends matter a lot.")  # an update keeps its place
        reader.refresh()
        assert neighbours(reader, "chat/s1/3.md", 1) == neighbours(writer, "chat/s1/3.md", 1) == [
            "chat/s1/2.md", "chat/s1/4.md"]
    finally:
        writer.close()
        reader.close()


def test_writing_order_survives_compaction_and_matches_a_fresh_load():
    def doc(path: str, row_id: int) -> KeywordDoc:
        return KeywordDoc(path, "", None, (), np.array([1], dtype=np.int64), np.array([[0, 0, 0, 1]]), 1, row_id=row_id)

    live = KeywordIndex()
    written = [(f"{'ab'[i % 2]}/{i}.md", i) for i in range(1200)]  # two folders, interleaved
    for path, row_id in written:
        live.add(doc(path, row_id))
    live.neighbours([live.slot_of("a/600.md")], 1)  # the order is built, then kept up to date
    for path, row_id in written:  # updates: each moves to a new slot, and enough of them compact the index
        live.add(doc(path, row_id))
    assert len(live.paths) < 2 * len(written)  # compacted: dead slots dropped, slots renumbered
    live.remove("a/602.md")
    assert [live.paths[s] for s in live.neighbours([live.slot_of("a/600.md")], 2)[1]] == [
        "a/596.md", "a/598.md", "a/604.md", "a/606.md"]
    fresh = KeywordIndex()
    kept = [(path, row_id) for path, row_id in written if path != "a/602.md"][::-1]  # loaded in any order
    n = len(kept)
    term_ids, counts = np.array([1], dtype="<u4").tobytes(), np.array([0, 0, 0, 1], dtype="<u2").tobytes()
    fresh.load([p for p, _ in kept], [""] * n, [None] * n, [""] * n, [term_ids] * n, [counts] * n, [1] * n,
               [r for _, r in kept])
    for path in ("a/0.md", "b/1.md", "a/600.md", "b/1199.md"):
        mine = [live.paths[s] for s in live.neighbours([live.slot_of(path)], 3)[1]]
        assert mine == [fresh.paths[s] for s in fresh.neighbours([fresh.slot_of(path)], 3)[1]], path
