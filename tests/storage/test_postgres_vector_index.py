"""The PostgreSQL store's vector index: HNSW over the vectors in half precision, whose hits a search ranks by
the float vectors' cosines; a store made with the float index gets the new one when a server opens it.

A search through the official MCP client walks the half-precision index and answers what the directory
store, which compares the query with every float vector, answers for the same entries.
"""

from __future__ import annotations

import re

import psycopg
import pytest
from mcp import Client

from memdir.core.errors import VectorExtensionTooOldError
from memdir.core.settings import Settings
from memdir.embeddings import Embedder, load_embedder
from memdir.memory import Memory, NewEntry
from memdir.server.app import build_server
from memdir.storage.postgres import schema
from memdir.storage.postgres.schema import VECTOR_INDEX_NAME
from tests.fakes import FakeEmbedder
from tests.pg_scans import vector_index_scans

pytestmark = pytest.mark.postgres

_TOPICS = ["the deploy pipeline", "our PostgreSQL backups", "the billing service", "the onboarding guide",
           "the mobile app's login", "the search ranking", "the nightly data export", "the office wifi",
           "the customer support queue", "the quarterly budget", "the API rate limits", "the design system"]
_NEWS = ["failed on Monday because the disk was full", "needs a review before Friday's release",
         "was rewritten in Rust last spring", "is owned by Maria's team since the reorganisation",
         "got twice as fast after the cache was added", "keeps timing out for users in Asia",
         "was moved to the new cluster in March", "has no tests for the error paths",
         "costs more than we planned this year", "confused three new hires last week"]
QUERIES = ["why did the deploy break", "which service is slow for Asian customers", "who owns billing now",
           "what costs too much", "backups of the database"]


def indexes(url: str) -> dict[str, str]:
    """The store's HNSW indexes: name -> definition."""
    with psycopg.connect(url, autocommit=True) as conn:
        return dict(conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexdef LIKE '%USING hnsw%'"
        ).fetchall())


async def answers(settings: Settings, embedder: Embedder) -> list[str]:
    """MemorySearch's answers to `QUERIES` (with each result's score breakdown) through the MCP client."""
    async with Client(build_server(settings, embedder=embedder), mode="legacy") as client:
        found = []
        for query in QUERIES:
            result = await client.call_tool("MemorySearch", {"query": query, "top_k": 10, "explain": True})
            assert not result.is_error, result
            found.append(result.content[0].text)
        return found


@pytest.mark.anyio
async def test_a_search_walks_the_half_precision_index_and_answers_as_exact_search(pg_url, tmp_path):
    entries = [NewEntry(f"fact/{t}/note{n}.md", f"{topic.capitalize()} {news}.", metadata={"type": "fact"})
               for t, topic in enumerate(_TOPICS) for n, news in enumerate(_NEWS)]
    on_postgres = Settings(root=tmp_path / "pg", store=pg_url, evolution_enabled=False)
    in_files = Settings(root=tmp_path / "files", evolution_enabled=False)
    embedder = load_embedder(in_files.embeddings.model_dir, in_files.storage.cache_dir)  # (the real model)
    for settings in (on_postgres, in_files):
        with Memory.open(settings, embedder=embedder) as memory:
            memory.write_many(entries)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("ANALYZE")
    assert list(indexes(pg_url)) == [VECTOR_INDEX_NAME]  # (no float index beside it)

    before = vector_index_scans(pg_url)
    found = await answers(on_postgres, embedder)
    assert vector_index_scans(pg_url) == before + len(QUERIES)
    assert found == await answers(in_files, embedder)
    assert all(answer.startswith("10 results") for answer in found)


def test_a_store_made_with_the_float_index_gets_the_half_precision_one_and_searches_the_same(pg_url, tmp_path, monkeypatch):
    settings = Settings(root=tmp_path, store=pg_url, evolution_enabled=False)
    made_before = schema.MIGRATIONS[: [name for name, _ in schema.MIGRATIONS].index("0011_entry_reads") + 1]
    with monkeypatch.context() as before:
        before.setattr(schema, "MIGRATIONS", made_before)  # the schema the code before made, and its rows
        with Memory.open(settings, embedder=FakeEmbedder()) as memory:
            memory.write_many([NewEntry(f"fact/topic{i % 7}/note{i}.md", f"Note {i} about subject{i % 23} and the ledger.",
                                        metadata={"type": "fact"}) for i in range(300)])
            assert list(indexes(pg_url)) == ["entries_embedding"]
            # (no index holds what the search orders by: it compares the query with every vector)
            exact = [[hit.path for hit in memory.search(f"subject{i} ledger", top_k=10)] for i in range(5)]
            listed = {info.path: info.size for info in memory.list("fact", include_virtual=False)}

    with Memory.open(settings, embedder=FakeEmbedder()) as memory:  # upgrades the store
        assert list(indexes(pg_url)) == [VECTOR_INDEX_NAME]
        assert re.search(r"\(\(embedding\)::halfvec\(384\)\) halfvec_cosine_ops\).*m='16'.*ef_construction='200'",
                         indexes(pg_url)[VECTOR_INDEX_NAME])
        assert {info.path: info.size for info in memory.list("fact", include_virtual=False)} == listed
        assert [[hit.path for hit in memory.search(f"subject{i} ledger", top_k=10)] for i in range(5)] == exact
    assert vector_index_scans(pg_url) == 5  # (its connections closed: their counts reported)


@pytest.mark.parametrize("version", ["0.5.1", "0.6.2"])
def test_a_pgvector_without_half_precision_vectors_is_refused_saying_what_to_install(version):
    with pytest.raises(VectorExtensionTooOldError) as refused:
        schema.check_vector_version(version)
    assert f"pgvector {version}" in refused.value.message and "Nothing was changed" in refused.value.message
    assert "pgvector 0.7.0 or later" in refused.value.hint and "ALTER EXTENSION vector UPDATE" in refused.value.hint


@pytest.mark.parametrize("version", ["0.7.0", "0.8.2", "1.0", None])
def test_a_pgvector_with_half_precision_vectors_or_none_yet_passes_the_check(version):
    schema.check_vector_version(version)  # (None: the first migration's CREATE EXTENSION says what is missing)
