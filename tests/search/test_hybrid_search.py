"""Hybrid search: ranking, score breakdown, filters before the cut, keyword-only mode, thresholds."""

from __future__ import annotations

import pytest
from fakes import FakeEmbedder

from memdir.core.entry import Entry, Metadata
from memdir.core.settings import Settings
from memdir.embeddings.text import searchable_text, text_hash
from memdir.search.hybrid import HybridSearcher, normalize_prefix
from memdir.search.thresholds import relevance_needed, threshold_for
from memdir.storage.directory.index import DerivedIndex, FileStats

EMBEDDER = FakeEmbedder()
WRITERS: dict[int, object] = {}  # PostgreSQL index -> its adapter (its rows are the adapter's rows)


def open_index(root, store_kind, request):
    """The searcher's index of a new store: the directory's derived index, or PostgreSQL's."""
    if store_kind == "directory":
        return DerivedIndex(root)
    from memdir.storage.postgres.store import open_postgres

    adapter, index = open_postgres(request.getfixturevalue("pg_url"), Settings(root=root))
    WRITERS[id(index)] = adapter
    return index


def add(index, path: str, content: str, *, title: str = "", tags=(), type: str = "concept", embed=True):
    meta = Metadata(type=type, tags=list(tags))
    text = searchable_text(title, meta, content)
    vector = EMBEDDER.embed([text])[0] if embed else None
    model = EMBEDDER.model_id if embed else None
    adapter = WRITERS.get(id(index))
    if adapter is None:
        entry = Entry(path=path, content=content, title=title, metadata=meta, embedding=vector)
        index.upsert(entry, FileStats(), text_hash(text), model)
    else:  # as `Memory` writes: the entry's row, then its search columns, in one transaction
        with adapter.write(path, content, title=title, metadata=meta, embedding=vector, embedding_model=model) as (entry, stats):
            index.upsert(entry, stats, text_hash(text), model)


@pytest.fixture
def index(tmp_path, store_kind, request):
    index = open_index(tmp_path / "memory", store_kind, request)
    add(index, "skill/debugging/api-errors.md", "Read the response body and retry API calls with backoff.",
        title="Debugging API errors", tags=["debugging", "api"], type="skill")
    add(index, "concept/ruby/classes.md", "Ruby classes are blueprints; every object has a class.",
        title="Ruby classes", tags=["ruby", "oop"])
    add(index, "fact/http/status-codes.md", "HTTP 429 means too many requests; 503 means unavailable.",
        title="HTTP status codes", tags=["http", "api"], type="fact")
    add(index, "experience/deploy-2024.md", "The deploy failed because the database migration locked a table.",
        title="Deploy failure", tags=["deploy"], type="experience")
    yield index
    index.close()


def searcher(index, embedder=EMBEDDER, **settings):
    return HybridSearcher(index, Settings(**settings), embedder)


def test_best_match_first_with_breakdown(index):
    results = searcher(index).search("debugging api errors")
    assert results[0].path == "skill/debugging/api-errors.md"
    top = results[0]
    assert top.mode == "hybrid" and top.title == "Debugging API errors" and top.type == "skill"
    b = top.breakdown
    assert 0 < b.semantic <= 1 and b.bm25 == pytest.approx(1.0) and b.bm25_raw > 0
    assert b.keyword == pytest.approx(1.0)  # all three keywords are in the entry
    assert b.tag == pytest.approx(2 / 3)  # "debugging" and "api" are tags, "errors" is not
    s = Settings()
    expected = (s.search.semantic_weight * b.semantic + s.search.bm25_weight * b.bm25 + s.search.keyword_weight * b.keyword
                + s.search.tag_weight * b.tag + s.search.context_weight * b.context) / (
        s.search.semantic_weight + s.search.bm25_weight + s.search.keyword_weight + s.search.tag_weight + s.search.context_weight)
    assert top.score == pytest.approx(expected, abs=1e-6)
    assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)


def test_semantic_only_match_is_found_without_shared_keywords(index):
    # "blueprints" appears in no query keyword form here, but the fake embedder shares "ruby"/"object" buckets
    results = searcher(index).search("ruby object", top_k=1)
    assert results[0].path == "concept/ruby/classes.md"


def test_filters_apply_before_the_top_k_cut(index):
    for i in range(30):  # many better matches of another type
        add(index, f"concept/api/note{i}.md", "api errors debugging api errors", title="API errors", tags=["api"])
    s = searcher(index)
    assert all(r.type == "concept" for r in s.search("api errors", top_k=3))
    only_facts = s.search("api errors", top_k=1, types=["fact"])
    assert [r.path for r in only_facts] == ["fact/http/status-codes.md"]
    in_folder = s.search("api errors", top_k=1, path_prefix="skill/debugging")
    assert [r.path for r in in_folder] == ["skill/debugging/api-errors.md"]
    tagged = s.search("api errors", top_k=2, tags=["HTTP"])
    assert [r.path for r in tagged] == ["fact/http/status-codes.md"]
    assert s.search("api errors", types=["no-such-type"]) == []


def test_keyword_only_without_embedder(index):
    results = searcher(index, embedder=None).search("database migration")
    assert results[0].path == "experience/deploy-2024.md"
    assert all(r.mode == "keyword" and r.breakdown.semantic is None for r in results)
    # the semantic weight is left out, not counted as zero
    b = results[0].breakdown
    s = Settings()
    assert results[0].score == pytest.approx(
        (s.search.bm25_weight * b.bm25 + s.search.keyword_weight * b.keyword + s.search.tag_weight * b.tag + s.search.context_weight * b.context)
        / (s.search.bm25_weight + s.search.keyword_weight + s.search.tag_weight + s.search.context_weight), abs=1e-6)


def test_embedder_not_ready_means_keyword_mode(index):
    assert searcher(index, embedder=lambda: None).search("deploy")[0].mode == "keyword"
    assert searcher(index, embedder=lambda: EMBEDDER).search("deploy")[0].mode == "hybrid"


def test_query_vector_of_another_model_means_keyword_mode(index):
    vector = EMBEDDER.embed(["deploy"])[0]
    results = searcher(index, embedder=None).search("deploy", query_vector=vector, query_model="other/model")
    assert results[0].mode == "keyword"
    results = searcher(index, embedder=None).search("deploy", query_vector=vector, query_model=EMBEDDER.model_id)
    assert results[0].mode == "hybrid"


def test_unembedded_entries_are_still_found(index):
    add(index, "fact/plain.md", "zeppelins float on hydrogen", embed=False)
    assert searcher(index).search("zeppelins")[0].path == "fact/plain.md"


def test_threshold_cuts_on_the_fused_score(index):
    s = searcher(index)
    everything = s.search("api errors", top_k=10)
    cut = (everything[0].score + everything[-1].score) / 2
    kept = s.search("api errors", top_k=10, threshold=cut)
    assert kept and len(kept) < len(everything) and all(r.score >= cut for r in kept)


def test_short_queries_get_the_lower_adaptive_threshold(index):
    s = searcher(index, discovery_threshold_short=0.0, discovery_threshold=0.99, adaptive_word_cutoff=10)
    short = "api errors"
    long = "how should I go about debugging these api errors we keep getting today"
    discovery = s.settings.discovery
    assert threshold_for(discovery, short) == 0.0 and threshold_for(discovery, long) == 0.99
    assert relevance_needed(discovery, short) == discovery.min_score  # the floor still holds
    assert relevance_needed(discovery, long) == 0.99


def test_rrf_fusion_is_available(index):
    results = searcher(index, fusion="rrf").search("debugging api errors")
    assert results[0].path == "skill/debugging/api-errors.md"
    assert 0 < results[0].score <= 1.0


@pytest.mark.directory_store  # PostgreSQL has no per-process copy to refresh
def test_search_sees_other_processes_after_refresh(tmp_path, index):
    other = DerivedIndex(index.root)
    add(other, "concept/new.md", "quasars emit radio waves", title="Quasars")
    s = searcher(index)
    # both the vector matrix and the BM25 postings are per-process: nothing until refresh
    assert all(hit.path != "concept/new.md" for hit in s.search("quasars"))
    assert index.refresh()
    fresh = s.search("quasars")[0]
    assert fresh.path == "concept/new.md" and fresh.breakdown.semantic > 0.5
    other.close()


def test_empty_and_degenerate_queries(index):
    s = searcher(index)
    assert s.search("") == []
    assert s.search("deploy", top_k=0) == []
    # only stop words: no keywords, but the semantic side still answers
    assert s.search("the of and")[0].mode == "hybrid"
    assert searcher(index, embedder=None).search("the of and") == []


def test_normalize_prefix():
    assert normalize_prefix("memory://concept/ruby/") == "concept/ruby/"
    assert normalize_prefix("concept/**") == "concept/"
    assert normalize_prefix("concept/ruby/classes.md") == "concept/ruby/classes.md"
    assert normalize_prefix("/") is None and normalize_prefix(None) is None


def test_a_repeated_query_is_embedded_once(index, monkeypatch):
    """Discovery searches one message three times; only the first search runs the model."""
    embedder = FakeEmbedder()
    s = searcher(index, embedder=embedder)
    first = s.search("debugging api errors", types=["skill"])
    again = s.search("debugging api errors", types=["fact"])
    assert embedder.calls == 1 and first and again
    s.search("ruby classes")
    assert embedder.calls == 2
    monkeypatch.setattr("memdir.search.hybrid.QUERY_VECTORS_KEPT", 1)
    s.search("deploy failure")  # evicts everything older
    s.search("debugging api errors")
    assert embedder.calls == 4


def test_an_unknown_word_weighs_most_and_rare_words_outweigh_common_ones(tmp_path, store_kind, request):
    index = open_index(tmp_path / "idf", store_kind, request)
    for n in range(6):
        add(index, f"fact/common/{n}.md", f"The weather report number {n}.")
    add(index, "fact/rare.md", "Caroline went to the weather station.")
    add(index, "fact/other.md", "A weather note.")
    idf = index.idf(["weather", "carolin", "gina"])
    assert idf["gina"] > idf["carolin"] > idf["weather"]
    # Keyword coverage by idf: the entry holding the rare word ranks above those holding only the common one.
    hits = searcher(index, embedder=None, keyword_idf=True).search("Caroline weather")
    assert hits[0].path == "fact/rare.md" and hits[0].matched == ("carolin", "weather")
    assert hits[1].breakdown.keyword < 0.5 < hits[0].breakdown.keyword
    index.close()


def test_tag_matches_count_each_query_word_once_by_stem_or_shared_prefix():
    from memdir.core.keywords import stem
    from memdir.search.tags import TagMatcher

    words = {stem(word) for word in ["debug", "api", "kubernetes", "ops"]}
    tag_lists = [("debugger", "API"), ("kubernetes-ops",), ("debugging", "debug-tools"), ("opsec", "apis"), (), ("deb",)]
    # "debug" ~ "debugger" (a prefix, 4 letters or more), "api" = "API"; "ops" and "api" are too short
    # for a prefix match ("opsec", "apis"); one word matched by two tags counts once
    assert TagMatcher().counts(words, tag_lists).tolist() == [2, 2, 1, 0, 0, 0]


def test_the_tags_a_searcher_files_are_bounded():
    """A searcher files the words of the tags it meets; past its limit it starts afresh, and counts
    the same."""
    from memdir.search.tags import TagMatcher

    matcher = TagMatcher(limit=10)
    for i in range(50):
        tag_lists = [(f"topic{i}-{j}", "debugging") for j in range(4)] + [("other",)]
        assert matcher.counts({"debug", f"topic{i}"}, tag_lists).tolist() == [2, 2, 2, 2, 0]
        assert len(matcher) <= 10


def test_tag_matches_stay_right_while_another_search_files_new_tags() -> None:
    """A search counts tag matches while another search, in another thread, files tags it had not
    met, sharing their words: the search neither fails nor miscounts.

    A garbage collection runs Python code (its callbacks, finalizers) in the middle of C code,
    where the interpreter may switch threads. Here every allocation collects, and each collection
    in the middle of the search hands over to the other search, which files a new tag, so the
    tags filed change at every point where they could change under a running search."""
    import gc
    import threading

    from memdir.core.keywords import stem
    from memdir.search.tags import TagMatcher

    matcher = TagMatcher(limit=100_000)
    asked = [(f"debugging-{i}", "release") for i in range(20)] + [("deploy",)]
    words = {stem("debug"), stem("deploy")}
    matcher.counts(words, asked)  # (its tags filed before the race)
    searching = threading.current_thread()
    wanted, done, stop = threading.Event(), threading.Event(), threading.Event()

    def file_new_tags() -> None:  # the other search
        for i in range(1_000_000):
            while not wanted.wait(0.05):
                if stop.is_set():
                    return
            wanted.clear()
            matcher.counts(words, [(f"debugger{i}", f"deployment{i}")])
            done.set()

    handovers = iter(range(300))

    def hand_over(phase: str, info: dict) -> None:
        if phase == "start" and threading.current_thread() is searching and next(handovers, None) is not None:
            done.clear()
            wanted.set()
            done.wait(1)

    other = threading.Thread(target=file_new_tags)
    other.start()
    threshold = gc.get_threshold()
    gc.callbacks.append(hand_over)
    gc.set_threshold(1, 1_000_000, 1_000_000)  # (the young objects only)
    try:
        counted = [matcher.counts(words, asked).tolist() for _ in range(5)]
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(hand_over)
        stop.set()
        other.join()
    assert counted == [[1.0] * len(asked)] * 5


def test_tag_matches_count_each_query_word_once_by_stem_or_prefix(tmp_path):
    """A query word matches a tag word with its stem, or (both 4 letters or more) one a prefix of the
    other; an entry's tag share counts the query's words any of its tags match, each once."""
    index = DerivedIndex(tmp_path / "memory")
    add(index, "fact/a.md", "notes", tags=["debugger"])
    add(index, "fact/b.md", "notes", tags=["deb", "errs"])
    add(index, "fact/c.md", "notes", tags=["api-errors", "HTTP", "apis"])
    add(index, "fact/d.md", "notes", tags=["Debugging"])
    found = searcher(index).search("debug api errors http notes", top_k=10)
    shares = {r.path: r.breakdown.tag for r in found}
    assert shares == {"fact/a.md": 1 / 5, "fact/b.md": 0.0, "fact/c.md": 3 / 5, "fact/d.md": 1 / 5}
    index.close()
