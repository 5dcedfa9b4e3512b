"""The PostgreSQL store at 100K (and 1M) entries: search latency and HNSW recall against exact search.

    python bench/bench_postgres.py --data ../shared/data/locomo10.json [--store postgresql://...] [--sizes 100000 1000000]

Without ``--store`` it starts a throwaway PostgreSQL + pgvector cluster (`tests.pg_cluster`,
with `CLUSTER_SETTINGS`: 6 GB shared buffers) on a unix socket and stops it at the end; with
``--store`` (or ``--cluster-dir DIR``: the throwaway cluster kept in DIR and started again)
a schema per size stays, and a re-run with the same size and word range reuses it (only the
HNSW index is built again when its options changed; ``--reload`` loads anyway).

Each size is loaded into its own schema with COPY (entries, postings, term counts: the rows
`memdir.storage.postgres` writes, with the same terms and weights); the postings' indexes
and the HNSW graph are built after the rows (6 GB maintenance memory, 2 parallel workers;
1M: ~22 min on 2 shared cores), then ``VACUUM (FREEZE, ANALYZE)``. The store is opened as
``Memory.open(Settings(store=...))`` with the real model, warmed with 100 other searches, and
it prints median and p95 of:

* ``Memory.search`` (hybrid: BM25 over postings + HNSW vector search + fusion) **including
  the query embedding** — the target is p50 <= 20 ms at 100K, <= 30 ms at 1M — with the
  client's CPU time and, for a server on this machine, the database backend's CPU per search
  (what a search costs whatever else the shared machine runs);
* its parts: the HNSW query alone, the BM25 query alone;
* recall@10 of the HNSW search against exact search (every cosine, computed with numpy over
  all the store's vectors) for the same query vectors, by ``hnsw_ef_search`` and the candidate
  list it makes at the store's size — target >= 0.95 with the default.

Entry text: the pseudo-English of ``bench/bench_search.py`` (Zipf words headed by real stop
words; 3-7 word titles, 20-60 word contents (``--words``), 3 tags of 300, 4 types in 200 folders).
Entry vectors are synthetic but shaped like real ones: each is a random convex mix of
three all-MiniLM-L6-v2 embeddings of LoCoMo turns plus a little noise, normalised (real
sentence embeddings fill a narrow cone, which random unit vectors do not; embedding 100K
texts with the model would take over an hour on this machine). Queries are LoCoMo
questions (embedded by the model each time) with three corpus words added, so both the
vector side and the keyword side have work. The machine is shared (2 cores, other
workers' jobs): timings are noisy, and the load average is printed with them.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg  # noqa: E402
from bench_search import TextGenerator, summary, timed  # noqa: E402
from corpora import DEFAULT_LOCOMO, locomo_corpora, real_embedder  # noqa: E402
from pgvector.psycopg import register_vector  # noqa: E402

from memdir.core.entry import Metadata, entry_type  # noqa: E402
from memdir.core.settings import Settings  # noqa: E402
from memdir.embeddings.text import text_recipe  # noqa: E402
from memdir.memory import Memory  # noqa: E402
from memdir.storage.postgres.adapter import as_array, metadata_json  # noqa: E402
from memdir.storage.postgres.index import EF_SEARCH, stored_term  # noqa: E402
from memdir.storage.postgres.schema import HNSW_OPTIONS, VECTOR_INDEX, VECTOR_INDEX_NAME, migrate  # noqa: E402
from memdir.storage.records import entry_terms, folder_of

TYPES = ("concept", "fact", "skill", "experience")
BASES = 1024
MAINTENANCE_MEMORY = "6GB"  # the 1M HNSW graph (~2 KB an entry) is built in memory
# The throwaway cluster's settings beyond the defaults: room for the 1M store's hot pages (HNSW
# graph, postings and entries indexes) and a load that does not checkpoint every few seconds.
CLUSTER_SETTINGS = {"shared_buffers": "6GB", "max_wal_size": "8GB", "checkpoint_timeout": "30min",
                    "max_parallel_maintenance_workers": "2"}
COPY_COLUMNS = (
    "id, path, content, title, metadata, updated_at, size, embedding, embedding_model, type, tags_folded,"
    " folder, length, vector_model, vector_text_hash, text_hash, counted, version, indexed"
)


def base_vectors(cache: Path, data: Path) -> tuple[np.ndarray, list[str], object]:
    """Real embeddings of LoCoMo turns (the mixing bases), LoCoMo questions, and the real embedder."""
    corpora = locomo_corpora(data)
    turns = [doc.content for corpus in corpora for doc in corpus.docs][:BASES]
    questions = [query.text for corpus in corpora for query in corpus.queries]
    embedder = real_embedder(cache, "locomo")
    bases = embedder.embed(turns)
    embedder.save()
    return bases, questions, embedder


def mixed_vectors(rng: np.random.Generator, bases: np.ndarray, n: int) -> np.ndarray:
    """``n`` unit vectors, each a random convex mix of three bases plus noise (see the module docstring)."""
    picks = rng.integers(0, len(bases), (n, 3))
    weights = rng.dirichlet((1.0, 1.0, 1.0), n).astype(np.float32)
    out = np.einsum("nk,nkd->nd", weights, bases[picks]).astype(np.float32)
    out += rng.standard_normal(out.shape, dtype=np.float32) * 0.01
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def load(url: str, n: int, bases: np.ndarray, model_id: str, recipe: str, weights: np.ndarray, words: tuple[int, int]) -> float:
    """Load ``n`` synthetic entries into the empty store at ``url`` with COPY; returns seconds taken."""
    started = time.perf_counter()
    gen = TextGenerator()
    rng = np.random.default_rng(11)
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        register_vector(conn)
        conn.execute(f"DROP INDEX {VECTOR_INDEX_NAME}")  # built once after loading: far faster than row by row
        conn.execute("ALTER TABLE postings DROP CONSTRAINT postings_pkey")
        conn.execute("DROP INDEX postings_entry")
        stats: Counter[str] = Counter()
        total_length = total_size = 0
        now = datetime.now(UTC)
        batch = 20_000
        for start in range(0, n, batch):
            count = min(batch, n - start)
            titles = gen.texts(rng.integers(3, 7, count))
            contents = gen.texts(rng.integers(words[0], words[1], count))
            vectors = mixed_vectors(rng, bases, count)
            tags = rng.integers(0, 300, (count, 3))
            with conn.transaction():
                with conn.cursor().copy(f"COPY entries ({COPY_COLUMNS}) FROM STDIN") as copy_entries:
                    rows = []
                    for j in range(count):
                        i = start + j + 1
                        kind = TYPES[i % 4]
                        path = f"{kind}/topic{i % 200}/entry{i}.md"
                        entry_tags = [gen.tags[t] for t in tags[j]]
                        meta = Metadata(type=kind, tags=entry_tags, domain=f"domain{i % 20}")
                        terms = entry_terms(titles[j], entry_tags, meta.domain or "", contents[j])
                        tf = terms.counts.astype(np.float32) @ weights
                        stored = [stored_term(term) for term in terms.terms]
                        stats.update(stored)
                        rows.extend((term, i, float(f), terms.length) for term, f in zip(stored, tf))
                        size = len(contents[j].encode())
                        total_length += terms.length
                        total_size += size
                        copy_entries.write_row((
                            i, path, contents[j], titles[j], metadata_json(meta), now, size, vectors[j], model_id,
                            entry_type(kind, path), [t.casefold() for t in entry_tags], folder_of(path), terms.length,
                            model_id, "h", "h",
                            True, i, i,
                        ))
                with conn.cursor().copy("COPY postings (term, entry, tf, length) FROM STDIN") as copy_postings:
                    for row in rows:
                        copy_postings.write_row(row)
            print(f"    loaded {start + count:,} entries ({time.perf_counter() - started:.0f} s)", flush=True)
        with conn.transaction():
            with conn.cursor().copy("COPY term_stats (term, entries) FROM STDIN") as copy_terms:
                for term, hits in stats.items():
                    copy_terms.write_row((term, hits))
            conn.execute("SELECT setval('changes', %s)", (n,))
            conn.execute("SELECT setval('entries_id_seq', %s)", (n,))
            conn.execute(
                "UPDATE store_state SET entries = %s, total_length = %s, total_size = %s, change = %s, text_recipe = %s",
                (n, total_length, total_size, n, recipe),
            )
        print(f"    rows in: {time.perf_counter() - started:.0f} s ({n / (time.perf_counter() - started):.0f} entries/s);"
              " building indexes", flush=True)
        conn.execute(f"SET maintenance_work_mem = '{MAINTENANCE_MEMORY}'")
        conn.execute("SET max_parallel_maintenance_workers = 2")
        conn.execute("ALTER TABLE postings ADD PRIMARY KEY (term, entry) INCLUDE (tf, length)")
        conn.execute("CREATE INDEX postings_entry ON postings (entry, term)")
        print(f"    postings indexes: {time.perf_counter() - started:.0f} s", flush=True)
        conn.execute("CREATE TABLE bench_load (entries integer, words_min integer, words_max integer)")
        conn.execute("INSERT INTO bench_load VALUES (%s, %s, %s)", (n, *words))
    build_vector_index(url)
    return time.perf_counter() - started


def build_vector_index(url: str) -> None:
    """(Re)build the HNSW index as the store's migrations define it now, then VACUUM (FREEZE,
    ANALYZE): the visibility map it sets is what lets the postings and neighbour reads be
    index-only scans (without it every probe also read the row)."""
    started = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET maintenance_work_mem = '{MAINTENANCE_MEMORY}'")  # the graph is built in memory when it fits
        conn.execute("SET max_parallel_maintenance_workers = 2")
        conn.execute(f"DROP INDEX IF EXISTS entries_embedding, {VECTOR_INDEX_NAME}")  # (the float one: a store made before)
        conn.execute(VECTOR_INDEX)
        print(f"    HNSW index {HNSW_OPTIONS}: {time.perf_counter() - started:.0f} s", flush=True)
        conn.execute("VACUUM (FREEZE, ANALYZE)")
        print(f"    VACUUM (FREEZE, ANALYZE): {time.perf_counter() - started:.0f} s", flush=True)


def prepared(base_url: str, schema: str, url: str, n: int, words: tuple[int, int]) -> str:
    """What of the schema can be reused: ``"all"``, ``"rows"`` (the HNSW index was built with other
    options: rebuilt alone) or ``"nothing"`` (loaded again)."""
    with psycopg.connect(base_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        if conn.execute("SELECT to_regclass(%s)", (f"{schema}.bench_load",)).fetchone()[0] is None:
            return "nothing"
        if conn.execute(f"SELECT entries, words_min, words_max FROM {schema}.bench_load").fetchone() != (n, *words):
            return "nothing"
        definition = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND indexname IN ('entries_embedding', %s)",
            (schema, VECTOR_INDEX_NAME),
        ).fetchone()
    if definition is None or any(f"{key}='{value}'" not in definition[0] for key, value in HNSW_OPTIONS.items()):
        return "rows"
    with psycopg.connect(url, autocommit=True) as conn:  # (the store's own migrations: as Memory.open applies them)
        migrate(conn)
    return "all"


def server_cpu(pid: int) -> float | None:
    """CPU milliseconds the server process ``pid`` has used (None when it is not on this machine):
    with the client's CPU, what a search costs whatever else the machine runs."""
    try:
        if Path(f"/proc/{pid}/comm").read_text().strip() != "postgres":
            return None  # (a remote server's backend: this machine's process of that number is another)
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def exact_top_10(url: str, vectors: np.ndarray, model_id: str) -> list[set[str]]:
    """The exact 10 nearest entries of each vector: every comparable entry's cosine, computed with
    numpy over all the store's vectors read once (a sequential scan per query took ~4 s at 1M)."""
    queries = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    best = np.full((len(queries), 10), -np.inf)
    best_paths = np.full((len(queries), 10), "", dtype=object)
    with psycopg.connect(url) as conn:  # (a server-side cursor lives in a transaction)
        register_vector(conn)
        with conn.cursor(name="exact", binary=True) as cursor:
            cursor.execute(
                "SELECT path, embedding FROM entries WHERE embedding IS NOT NULL AND stub_kind IS NULL"
                " AND vector_model = %s", (model_id,),
            )
            while rows := cursor.fetchmany(50_000):
                matrix = np.vstack([as_array(row[1]) for row in rows])
                cosines = queries @ (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).T
                paths = np.array([row[0] for row in rows], dtype=object)
                scores = np.concatenate([best, cosines], axis=1)
                names = np.concatenate([best_paths, np.broadcast_to(paths, cosines.shape)], axis=1)
                keep = np.argpartition(-scores, 9, axis=1)[:, :10]
                best, best_paths = np.take_along_axis(scores, keep, 1), np.take_along_axis(names, keep, 1)
    return [set(row) for row in best_paths]


def list_length(url: str, ef_search: int, limit: int = 10) -> int:
    """The candidate list a search of ``limit`` keeps at this store's size with ``hnsw_ef_search``
    set to ``ef_search`` (the store's own rule, `memdir.storage.postgres.index.EF_SEARCH`)."""
    with psycopg.connect(url) as conn:
        return int(conn.execute(f"SELECT {EF_SEARCH} FROM store_state", (ef_search, ef_search, limit)).fetchone()[0])


def recall_at_10(memory: Memory, exact: list[set[str]], vectors: np.ndarray, model_id: str) -> float:
    """Mean share of the exact top 10 that the store's HNSW search returns."""
    found = [len(wanted & set(memory.index.semantic_hits(vector, model_id, 10).top[:10])) / 10
             for wanted, vector in zip(exact, vectors)]
    return float(np.mean(found))


def bench_size(base_url: str, n: int, args, bases, questions, embedder) -> None:
    print(f"\n== {n:,} entries", flush=True)
    schema = f"bench_{n}"
    url = base_url + ("&" if "?" in base_url else "?") + f"options=-c%20search_path%3D{schema}%2Cpublic"
    settings = Settings(root=Path(tempfile.mkdtemp(prefix="memdir-bench-pg-")), store=url)
    words = tuple(args.words)
    reuse = "nothing" if args.reload else prepared(base_url, schema, url, n, words)
    if reuse == "nothing":
        with psycopg.connect(base_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            conn.execute(f"CREATE SCHEMA {schema}")
        weights = np.asarray(settings.search.bm25_column_weights, dtype=np.float32)
        recipe = text_recipe(settings.embeddings.max_chars, settings.embeddings.summary)
        seconds = load(url, n, bases, embedder.model_id, recipe, weights, words)
        print(f"  loaded with COPY + index builds in {seconds:.0f} s", flush=True)
    elif reuse == "rows":
        print(f"  (schema {schema} holds these {n:,} entries; its HNSW index had other options: rebuilding it)")
        build_vector_index(url)
    else:
        print(f"  (schema {schema} already holds these {n:,} entries and index: reused)")
    gen = TextGenerator(seed=99)
    rng = np.random.default_rng(5)
    picked = rng.choice(len(questions), args.queries, replace=len(questions) < args.queries)
    queries = [f"{questions[i]} {' '.join(gen.sample(3))}" for i in picked]
    with Memory.open(settings, embedder=embedder.inner) as memory:
        model = embedder.inner
        warm = [f"{questions[i]} {' '.join(gen.sample(3))}" for i in rng.choice(len(questions), args.warm)]
        for query in warm:  # other queries first: the model and the server's cache warm, as in a running server
            memory.search(query)
        backend = memory.index.db.connection().info.backend_pid
        server_before = server_cpu(backend)
        full = timed(lambda q: memory.search(q, top_k=10), queries)
        print(f"  Memory.search incl. query embedding    {summary(full)}   (load {os.getloadavg()[0]:.1f})", flush=True)
        if server_before is not None:
            server = (server_cpu(backend) - server_before) / len(queries)
            print(f"    database server CPU per search (mean)  {server:.2f} ms")
        vectors = [model.embed([q])[0] for q in queries]
        hnsw = timed(lambda v: memory.index.semantic_hits(v, model.model_id, 50), vectors)
        print(f"    HNSW query alone (50 nearest)        {summary(hnsw)}")
        terms = [memory.term_weights(q) for q in queries]
        bm25 = timed(lambda t: memory.index.keyword_hits(list(t), 50, types=None, path_prefix=None, tags=None), terms)
        print(f"    BM25 query alone (50 best)           {summary(bm25)}")
        sample = np.asarray(vectors[: args.recall_queries])
        exact = exact_top_10(url, sample, model.model_id)
        for ef in sorted({100, 150, 200, 300, 400, 800, settings.storage.hnsw_ef_search}):
            memory.index.ef_search = ef
            recall = recall_at_10(memory, exact, sample, model.model_id)
            took = timed(lambda v: memory.index.semantic_hits(v, model.model_id, 10), sample)
            default = " (the default)" if ef == settings.storage.hnsw_ef_search else ""
            print(f"  recall@10 of HNSW vs exact search, hnsw_ef_search {ef:>3}{default}"
                  f" (a list of {list_length(url, ef)} at this size): {recall:.3f}   HNSW query {summary(took)}", flush=True)
        memory.index.ef_search = settings.storage.hnsw_ef_search


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", help="a postgresql:// URL (default: start a throwaway cluster)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--recall-queries", type=int, default=100)
    parser.add_argument("--warm", type=int, default=100, help="searches run before the measured ones")
    parser.add_argument("--words", type=int, nargs=2, default=[20, 60], metavar=("MIN", "MAX"),
                        help="words per entry's content (fewer keep a 1M load within reach of this machine)")
    parser.add_argument("--reload", action="store_true", help="load the entries again even if a schema holds them")
    parser.add_argument("--cluster-dir", type=Path,
                        help="without --store: keep the throwaway cluster here, so a re-run reuses its loaded schemas")
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo's locomo10.json")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-cache")
    args = parser.parse_args(argv)
    bases, questions, embedder = base_vectors(args.cache, args.data)
    cluster = None
    if args.store:
        base_url = args.store
    else:
        from tests.pg_cluster import Cluster

        cluster = Cluster(args.cluster_dir).start(CLUSTER_SETTINGS)
        base_url = cluster.url()
    try:
        for n in args.sizes:
            bench_size(base_url, n, args, bases, questions, embedder)
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
