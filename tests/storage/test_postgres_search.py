"""The PostgreSQL store's search reads: what one search caches stays true across servers, and
what `candidates` reads ahead (cosines, neighbours and their words) is what the separate reads give."""

from __future__ import annotations

from contextlib import nullcontext
from datetime import UTC, datetime

import numpy as np
import pytest
from fakes import FakeEmbedder

from memdir.core.settings import Settings
from memdir.memory import Memory, NewEntry
from tests.pg_scans import vector_index_scans

pytestmark = pytest.mark.postgres


@pytest.fixture
def two_servers(tmp_path, pg_url):
    """Two `Memory` objects on one PostgreSQL store, as two servers on two machines would be."""
    first = Memory.open(Settings(root=tmp_path / "a", store=pg_url), embedder=FakeEmbedder())
    second = Memory.open(Settings(root=tmp_path / "b", store=pg_url), embedder=FakeEmbedder())
    yield first, second
    first.close()
    second.close()


def paths(results):
    return [result.path for result in results]


def hnsw_scans(index, url: str) -> int:
    """Scans of the HNSW index so far, once every connection of ``index`` has reported its own."""
    return vector_index_scans(url, [conn for _, conn in list(index.db._all)])


def test_an_entry_archived_by_another_server_leaves_this_servers_next_search(two_servers):
    first, second = two_servers
    first.write("concept/otters.md", "Otters hold hands while they sleep.", title="Otters")
    first.write("concept/beavers.md", "Beavers build dams of wood.", title="Beavers")
    assert "concept/otters.md" in paths(first.search("otters sleep"))  # (the hidden set is cached now)

    second.update_metadata("concept/otters.md", {"archived_at": datetime.now(UTC).isoformat()})
    assert "concept/otters.md" not in paths(first.search("otters sleep"))
    assert "concept/otters.md" in paths(first.search("otters sleep", include_archived=True))

    second.update_metadata("concept/otters.md", {"archived_at": None})
    assert "concept/otters.md" in paths(first.search("otters sleep"))


def test_candidates_read_ahead_what_the_separate_reads_give(tmp_path, pg_url):
    memory = Memory.open(Settings(root=tmp_path / "m", store=pg_url), embedder=FakeEmbedder())
    try:
        for i, text in enumerate(["moving from Sweden", "friends for four years", "a dog named Rex",
                                  "the support group", "moving to the coast", "four cats"]):
            memory.write(f"conversation/one/turn{i}.md", text)
        memory.write("conversation/two/turn0.md", "moving house in four days")
        index = memory.index
        wanted = ["conversation/one/turn1.md", "conversation/two/turn0.md", "conversation/one/turn4.md"]
        terms = ["move", "four", "year"]
        vector = FakeEmbedder().embed(["moving four years"])[0]
        with index.reading():
            hits = index.semantic_hits(vector, FakeEmbedder().model_id, 2)
            found = index.candidates(wanted, terms)
            owner, keys = index.neighbours(found.paths, 3)
            held = index.holding(terms, keys)
            read_ahead = dict(hits.known)
        # the same reads, each on its own (outside a search nothing is read ahead)
        alone_owner, alone_keys = index.neighbours(found.paths, 3)
        alone_held = index.holding(terms, alone_keys)
        def holding_pairs(owners, neighbours, holds):  # (owner, neighbour, words it holds) where it holds any
            found = [(o, k, frozenset(t for t in terms if holds[t][i]))
                     for i, (o, k) in enumerate(zip(owners.tolist(), neighbours.tolist()))]
            return sorted(row for row in found if row[2])

        assert holding_pairs(owner, keys, held) == holding_pairs(alone_owner, alone_keys, alone_held) != []
        assert len(alone_keys) > len(keys)  # (read ahead: only the neighbours holding a query word)
        exact = index.cosines(vector, hits.condition, hits.params, found.paths)
        assert {path: read_ahead[path] for path in found.paths} == pytest.approx(exact)
        assert found.paths == wanted
        assert found.contains["four"].tolist() == [True, True, False]
        assert np.all(found.contains["move"] == np.array([False, True, True]))
    finally:
        memory.close()


def test_the_hnsw_candidate_list_grows_with_the_store_by_default(tmp_path, pg_url):
    """A list of fixed length finds fewer of the true nearest entries as the graph grows (recall@10
    0.88 at 1M with 300): by default it is 300 up to 100K entries, then grows with the square root
    of the size, up to pgvector's 1,000 (`bench/bench_postgres.py` measures the recall it gives)."""
    memory = Memory.open(Settings(root=tmp_path / "a", store=pg_url), embedder=FakeEmbedder())
    memory.write("concept/otters.md", "Otters hold hands while they sleep.", title="Otters")
    vector = memory.read("concept/otters.md").embedding
    index = memory.index

    def list_length(entries: int, limit: int = 10) -> int:
        index.db.connection().execute("UPDATE store_state SET entries = %s", (entries,))  # (the count the rule reads)
        with index.reading() as conn:
            assert index.semantic_hits(vector, FakeEmbedder.model_id, limit).top[0] == "concept/otters.md"
            return int(conn.execute("SELECT current_setting('hnsw.ef_search')").fetchone()[0])

    try:
        assert [list_length(n) for n in (1, 100_000, 400_000, 1_000_000, 20_000_000)] == [300, 300, 600, 949, 1000]
        assert list_length(1, limit=500) == 500  # never shorter than the search asks for
    finally:
        memory.close()


def test_a_filtered_keyword_search_finds_what_filtering_the_whole_ranking_finds(tmp_path, pg_url):
    """A filter is tested on the best-scored entries first (at most `KEYWORD_OVERFETCH` times the hits
    asked for); when too few of those pass, on every entry holding the words. Either way: the best of
    the whole ranking that pass, in its order."""
    from memdir.storage.postgres.search import KEYWORD_OVERFETCH

    memory = Memory.open(Settings(root=tmp_path / "m", store=pg_url), embedder=FakeEmbedder())
    try:
        count = 3 * KEYWORD_OVERFETCH + 6
        for i in range(count):
            kind = "skill" if i >= count - 3 else "fact"  # the skills have the longest text: ranked last
            memory.write(f"{kind}/ledger/note{i:02}.md", "ledger " * (1 + i % 4) + "filler " * i,
                         title=f"Note {i}", metadata={"type": kind})
        index = memory.index
        ranking = list(index.keyword_hits(["ledger"], 1000))
        assert len(ranking) == count

        def expected(keep, limit):
            return [path for path in ranking if keep(path)][:limit]

        for types, prefix, limit, keep in [
            (["fact"], None, 5, lambda p: p.startswith("fact/")),  # passes often: the best-scored suffice
            (["skill"], None, 2, lambda p: p.startswith("skill/")),  # passes last: every entry tested
            (None, "skill/ledger", 3, lambda p: p.startswith("skill/")),
            (["skill"], "fact", 3, lambda p: False),
        ]:
            found = index.keyword_hits(["ledger"], limit, types=types, path_prefix=prefix)
            assert list(found) == expected(keep, limit), (types, prefix)
    finally:
        memory.close()


def test_a_search_walks_the_graph_not_every_vector(tmp_path, pg_url):
    """On a store too small for the planner to pick the HNSW index by its own estimate, an unfiltered
    search still walks the graph: reading every entry's vector (stored out of line) read ~7 pages a row."""
    import psycopg

    memory = Memory.open(Settings(root=tmp_path / "m", store=pg_url, evolution_enabled=False), embedder=FakeEmbedder())
    try:
        memory.write_many([NewEntry(f"fact/topic{i % 5}/note{i}.md", f"Note {i} about subject{i} and the ledger.",
                                    metadata={"type": "fact"}) for i in range(400)])
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("ANALYZE")

        def walks() -> int:
            return hnsw_scans(memory.index, pg_url)

        before = walks()
        assert memory.search("what about subject12")
        assert walks() == before + 1
        assert memory.search("what about subject12", types=["fact"])  # (filtered: the planner's choice)
    finally:
        memory.close()


def test_a_vector_search_leaves_the_planner_settings_as_the_connection_had_them(tmp_path, pg_url):
    """The walk's planner settings last for its own statement: what the search reads next is planned with
    the connection's own (here, set at connection: sequential scans off, a cheaper operator)."""
    from urllib.parse import quote

    url = pg_url + quote(" -c enable_seqscan=off -c cpu_operator_cost=0.003", safe="")
    memory = Memory.open(Settings(root=tmp_path / "m", store=url), embedder=FakeEmbedder())
    settings = "SELECT current_setting('cpu_operator_cost'), current_setting('enable_seqscan'), current_setting('enable_sort')"
    try:
        memory.write("fact/otters.md", "Otters hold hands while they sleep.", title="Otters", metadata={"type": "fact"})
        vector = FakeEmbedder().embed(["otters sleep"])[0]
        for types in (None, ["fact"]):
            with memory.index.reading() as conn:
                assert memory.index.semantic_hits(vector, FakeEmbedder.model_id, 5, types=types).top[0] == "fact/otters.md"
                assert conn.execute(settings).fetchone() == ("0.003", "off", "on")
            assert memory.search("otters sleep", types=types)
            assert memory.index.db.connection().execute(settings).fetchone() == ("0.003", "off", "on")
    finally:
        memory.close()


def test_keyword_searches_of_one_query_by_type_score_once_and_find_what_their_own_searches_find(tmp_path, pg_url):
    """In a reading of one query, the first keyword search by type reads the best of the unfiltered
    ranking with their types; the next take their hits from it when it tells (enough of their types
    among the rows read), and search on their own when it does not. Each finds what it finds alone."""
    memory = Memory.open(Settings(root=tmp_path / "m", store=pg_url, evolution_enabled=False), embedder=FakeEmbedder())
    try:
        count = 54
        for i in range(count):
            kind = "skill" if i >= count - 3 else ("fact", "concept")[i % 2]  # the skills are ranked last
            memory.write(f"{kind}/ledger/note{i:02}.md", "ledger " * (1 if kind == "skill" else 1 + i % 4) + "filler " * i,
                         title=f"Note {i}", metadata={"type": kind})
        index = memory.index
        scorings: list[int] = []
        send = index._rows

        def counting(*statements, rows_of=-1):
            scorings[-1] += sum("JOIN postings p ON p.term = q.term" in sql for sql, _ in statements)
            return send(*statements, rows_of=rows_of)

        index._rows = counting

        def searched(asked, one_query):
            """The hits of each search, in one reading of one query or each alone, and the scoring statements each sent."""
            scorings.clear()
            with index.reading(one_query=True) if one_query else nullcontext():
                hits = []
                for types, limit in asked:
                    scorings.append(0)
                    hits.append(list(index.keyword_hits(["ledger"], limit, types=types).items()))
            return hits, list(scorings)

        # The skills are not among the ranking's best: their search tests every scored entry, alone or
        # not. The other types' searches take theirs from the ranking; one asks for more than it read.
        asked = [(["skill"], 2), (["fact"], 5), (["fact", "concept"], 3), (["skill"], 1), (["concept"], 40)]
        alone, _ = searched(asked, False)
        assert [len(hits) for hits in alone] == [2, 5, 3, 1, 25]
        assert searched(asked, True) == (alone, [2, 0, 0, 1, 1])
        # A first search whose type comes often reads the ranking no further than its hits: a next one
        # that wants more of another type searches on its own.
        asked = [(["fact"], 2), (["concept"], 20), (["fact", "concept"], 2)]
        alone, _ = searched(asked, False)
        assert searched(asked, True) == (alone, [1, 1, 0])
    finally:
        memory.close()


def test_searches_of_one_query_by_type_share_one_walk_and_find_what_their_own_walks_find(tmp_path, pg_url):
    """In a reading of one query (discovery: skills, then the other types), the first search by type
    walks the graph unfiltered up to where its filtered walk would stop; the next takes its rows from
    what that walk read, when it read as far as that search's own walk would. Each finds what a walk of
    its own finds, in the same order."""
    from urllib.parse import quote

    url = pg_url + quote(" -c enable_seqscan=off -c enable_sort=off", safe="")  # (so small a store: the planner walks)
    memory = Memory.open(Settings(root=tmp_path / "m", store=url, evolution_enabled=False), embedder=FakeEmbedder())
    try:
        memory.write_many([NewEntry(f"{kind}/topic{i % 5}/note{i}.md", f"Note {i} about subject{i % 40} and the ledger.",
                                    metadata={"type": kind}) for i in range(300) for kind in [("skill", "fact", "concept")[i % 3]]])
        index = memory.index
        vector = FakeEmbedder().embed(["the ledger and subject7"])[0]
        model = FakeEmbedder.model_id

        def scans() -> int:
            return hnsw_scans(index, pg_url)

        # (the last asks for more skills than the first walk read: it walks on its own; a search of the
        # other types walks on its own too when the first walk passed fewer of them than it asks for,
        # which depends on the graph, whose layers HNSW draws at random)
        asked = [(["skill"], 40), (["fact", "concept"], 40), (["fact", "concept"], 50), (["skill"], 60)]
        alone = []
        for types, limit in asked:
            with index.reading():
                hits = index.semantic_hits(vector, model, limit, types=types)
                alone.append((hits.top, hits.known))
        before = scans()
        with index.reading(one_query=True):
            shared = [index.semantic_hits(vector, model, limit, types=types) for types, limit in asked]
            walk = index._search().walk
        assert [(hits.top, hits.known) for hits in shared] == alone
        assert [len(top) for top, _ in alone] == [40, 40, 50, 60]
        passed = sum(type_ != "skill" for _, _, type_ in walk.rows)  # the other types' rows the first walk read
        assert passed >= 40  # (so the second search takes its rows from that walk: ~80 expected, a third are skills)
        assert scans() == before + 2 + (passed < 50)
    finally:
        memory.close()


def test_a_search_for_a_type_few_entries_have_reads_those_entries_not_a_shared_walk(tmp_path, pg_url):
    """Where the planner reads a rare type's few entries instead of walking the graph (exact, and
    cheaper than a walk that meets one now and then), a reading of one query keeps its plan."""
    import psycopg

    memory = Memory.open(Settings(root=tmp_path / "m", store=pg_url, evolution_enabled=False), embedder=FakeEmbedder())
    try:
        memory.write_many([NewEntry(f"fact/topic{i % 5}/note{i}.md", f"Note {i} about subject{i % 40} and the ledger.",
                                    metadata={"type": "fact"}) for i in range(500)]
                          + [NewEntry(f"skill/s{i}.md", f"How to keep the ledger, way {i}.", metadata={"type": "skill"})
                             for i in range(3)])
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("ANALYZE")
        index = memory.index
        vector = FakeEmbedder().embed(["the ledger"])[0]
        with index.reading():
            alone = index.semantic_hits(vector, FakeEmbedder.model_id, 10, types=["skill"]).top
        with index.reading(one_query=True):
            assert index.semantic_hits(vector, FakeEmbedder.model_id, 10, types=["skill"]).top == alone
            assert index._search().walk is None
        assert {f"skill/s{i}.md" for i in range(3)} <= set(alone)
    finally:
        memory.close()
