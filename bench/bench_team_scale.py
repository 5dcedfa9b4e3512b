"""What an agent's calls cost on a large team store: every call a user reaches, timed through the HTTP server.

    python bench/bench_team_scale.py [--sizes 2000 100000] [--cluster-dir DIR] [--calls 40] [--store directory]

For each size, a PostgreSQL store (a throwaway cluster with PostgreSQL's stock configuration, durable
commits included, kept in ``--cluster-dir`` so a re-run reuses its loaded schemas) is loaded with COPY as
``bench/bench_postgres.py`` loads it: synthetic entries, synthetic vectors shaped like real
ones (embedding 100K texts with the model would take over an hour on this machine).
With ``--store directory``, a directory store of the same entries instead, written by
``Memory.write_many`` in batches (files, derived index and audit log as an agent's writes leave
them) with the same synthetic vectors, kept in ``--cluster-dir`` as ``root-<size>`` for a re-run.

A real ``memdir serve --http`` (the real model) then serves the store, and one MCP client
(the official SDK) times, median and p95 over ``--calls`` calls each:

* MemoryWrite of a new entry (the real model embeds it; the reply lists near-duplicates): a turn of
  LoCoMo's conv-42 or conv-43 written as an agent recording a conversation writes it
  (`corpora.locomo_entries`; `WRITTEN` says why those), so what the runs leave in a kept store
  is English like the rest of a team's entries;
* MemorySearch, MemoryDiscover, MemoryGlob ``**/*.md`` (its first page);
* ``resources/list`` and reading ``memdir://status``;
* the web view's first page (``GET /``).

The model alone embedding a write's text and a query (in this process, the same model and threads,
timed in the same turns) is printed too: what a call costs beyond the model, so a figure on a quieter
machine can be predicted from the model's figure there. With ``--before DIR`` (a checkout of older
code) a second server runs that code on the same store, and each call goes to both in turn (the order
alternating), so the two are timed under the same load. ``--near-duplicates`` checks that the short
HNSW list of the near-duplicate check (``hnsw_ef_search_duplicates``) finds what the long one finds.

It also prints recall@10 of the store's default vector search against exact search
(every cosine, numpy over all vectors) for LoCoMo questions. The machine is shared: the
load average is printed with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import psycopg  # noqa: E402
from bench_postgres import TYPES, base_vectors, build_vector_index, exact_top_10, load, mixed_vectors, prepared  # noqa: E402
from bench_search import TextGenerator  # noqa: E402
from corpora import DEFAULT_LOCOMO, Doc, locomo_corpora  # noqa: E402

from memdir.core.entry import Metadata  # noqa: E402
from memdir.core.settings import Settings  # noqa: E402
from memdir.embeddings.text import searchable_text, text_recipe  # noqa: E402
from memdir.memory import Memory, NewEntry  # noqa: E402
from memdir.storage.postgres.search import WALK_ORDER  # noqa: E402

WORDS = (20, 60)
STOCK = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}
"""PostgreSQL's own defaults, in place of the test cluster's speed-ups (`tests.pg_cluster`): a commit waits for its fsync."""
WRITTEN = ("conv-42", "conv-43")
"""The LoCoMo conversations whose turns the timed writes record: no bulk-loaded entry's vector is mixed
from them (`bench_postgres.base_vectors`) and no query set asks about them (`bench_hnsw_list.query_sets`),
so the entries these runs leave in a kept store are no held-out query's source."""


def schema_url(base_url: str, n: int) -> str:
    schema = f"bench_{n}"
    return base_url + ("&" if "?" in base_url else "?") + f"options=-c%20search_path%3D{schema}%2Cpublic"


def ensure_store(base_url: str, n: int, bases: np.ndarray, model_id: str) -> str:
    """The URL of a schema holding ``n`` loaded entries (loaded now unless a former run left them)."""
    schema = f"bench_{n}"
    url = schema_url(base_url, n)
    reuse = prepared(base_url, schema, url, n, WORDS)
    if reuse == "nothing":
        with psycopg.connect(base_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            conn.execute(f"CREATE SCHEMA {schema}")
        settings = Settings(root=Path(tempfile.mkdtemp(prefix="memdir-bench-team-")))
        weights = np.asarray(settings.search.bm25_column_weights, dtype=np.float32)
        recipe = text_recipe(settings.embeddings.max_chars, settings.embeddings.summary)
        seconds = load(url, n, bases, model_id, recipe, weights, WORDS)
        print(f"  {n:,} entries loaded with COPY + index builds in {seconds:.0f} s", flush=True)
    elif reuse == "rows":
        build_vector_index(url)
    return url


class MixedVectors:
    """An embedder that answers with `bench_postgres.mixed_vectors` under the real model's name: the
    directory store's entries get vectors shaped like real ones, stored as the model's own."""

    dimensions = 384
    source = "synthetic (bench)"

    def __init__(self, model_id: str, bases: np.ndarray) -> None:
        self.model_id, self.bases = model_id, bases
        self.rng = np.random.default_rng(11)

    def embed(self, texts) -> np.ndarray:
        return mixed_vectors(self.rng, self.bases, len(texts))


def ensure_directory(folder: Path, n: int, bases: np.ndarray, model_id: str) -> Path:
    """A directory store of ``n`` entries under ``folder`` (written now unless a former run finished one):
    the texts `bench_postgres.load` makes, written as an agent's writes are, 1,000 to a change."""
    root, done = folder / f"root-{n}", folder / f"root-{n}.complete"
    if done.exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    started = time.perf_counter()
    gen = TextGenerator()
    rng = np.random.default_rng(11)
    settings = Settings(root=root)
    with Memory.open(settings, embedder=MixedVectors(model_id, bases)) as memory:
        batch = 1_000
        for start in range(0, n, batch):
            count = min(batch, n - start)
            titles = gen.texts(rng.integers(3, 7, count))
            contents = gen.texts(rng.integers(WORDS[0], WORDS[1], count))
            tags = rng.integers(0, 300, (count, 3))
            writes = []
            for j in range(count):
                i = start + j + 1
                kind = TYPES[i % 4]
                meta = Metadata(type=kind, tags=[gen.tags[t] for t in tags[j]], domain=f"domain{i % 20}")
                writes.append(NewEntry(f"{kind}/topic{i % 200}/entry{i}.md", contents[j], titles[j], meta))
            memory.write_many(writes)
            if (start + count) % 10_000 == 0:
                print(f"    wrote {start + count:,} entries ({time.perf_counter() - started:.0f} s)", flush=True)
    done.touch()
    print(f"  {n:,} entries written in {time.perf_counter() - started:.0f} s ({root})", flush=True)
    return root


def notes(data: Path) -> list[Doc]:
    """What the timed MemoryWrite calls write, in order: the turns of the `WRITTEN` conversations."""
    return [doc for corpus in locomo_corpora(data) if corpus.name in WRITTEN for doc in corpus.docs]


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"p50 {1000 * statistics.median(ordered):7.1f} ms   p95 {1000 * p95:7.1f} ms"


async def model_ready(client, seconds: int) -> None:
    """Wait up to ``seconds`` for the server behind ``client`` to have its model loaded (it loads in the
    background after the handshake; until then calls run without it)."""
    for _ in range(seconds):
        status = json.loads((await client.read_resource("memdir://status")).contents[0].text)
        if status["model_state"] == "ready":
            return
        await asyncio.sleep(1)


async def timed_calls(servers: list[tuple[str, str, str]], token: str, calls: int, queries: list[str],
                      written: list[Doc], model) -> dict[str, dict[str, list[float]]]:
    """Each call a user reaches, ``calls`` times, interleaved (the same load for each), to each of ``servers``
    ((label, MCP URL, web base) each; one after the other, the order turning each time); beside each call
    that embeds, ``model`` embedding its text alone. Each write records the next of ``written``, from a
    place that changes with the clock (a run after another does not write the same turns again).
    Times by label, then by call."""
    from contextlib import AsyncExitStack

    import httpx2

    from tests.server.http_process import mcp_client

    settings = Settings()
    first = time.time_ns() % len(written)
    took: dict[str, dict[str, list[float]]] = {label: {} for label, _, _ in servers}
    alone: dict[str, list[float]] = {}

    async def timed(label: str, name: str, call) -> object:
        started = time.perf_counter()
        result = await call
        took[label].setdefault(name, []).append(time.perf_counter() - started)
        if getattr(result, "is_error", False):
            raise SystemExit(f"{name} failed: {result.content[0].text}")
        return result

    def model_alone(name: str, text: str) -> None:
        started = time.perf_counter()
        model.embed([text])
        alone.setdefault(f"  the model alone, {name}", []).append(time.perf_counter() - started)

    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120))
        clients = [(label, await stack.enter_async_context(mcp_client(url, token)), base) for label, url, base in servers]
        for _, client, _ in clients:
            await model_ready(client, 60)  # (writes embed once it is)
            for warm in range(5):
                await client.call_tool("MemorySearch", {"query": queries[-1 - warm]})
        for i in range(calls):
            for turn, (label, client, base) in enumerate(clients[i % len(clients):] + clients[:i % len(clients)]):
                note = written[(first + i * len(clients) + turn) % len(written)]
                entry = {"content": note.content, "title": note.title, "type": "fact", "tags": note.metadata["tags"],
                         "related": [], "domain": "bench"}
                path = f"fact/team-bench/run-{time.time_ns()}.md"
                await timed(label, "MemoryWrite (new entry, real model)", client.call_tool("MemoryWrite", {**entry, "file_path": path}))
                await timed(label, "MemorySearch", client.call_tool("MemorySearch", {"query": queries[i]}))
                await timed(label, "MemoryDiscover", client.call_tool("MemoryDiscover", {"message": queries[-1 - i]}))
                await timed(label, "MemoryGlob **/*.md (first page)", client.call_tool("MemoryGlob", {"pattern": "**/*.md"}))
                await timed(label, "resources/list (first page)", client.list_resources())
                await timed(label, "memdir://status", client.read_resource("memdir://status"))
                response = await timed(label, "web view, first page", http.get(base + "/"))
                response.raise_for_status()
            model_alone("a write's text", searchable_text(entry["title"], Metadata(type="fact", tags=entry["tags"], domain="bench"),
                                                          entry["content"], settings.embeddings.max_chars,
                                                          summary=settings.embeddings.summary))
            model_alone("a query", queries[i])
    return {**took, "the model alone": alone}


def measure(store: str, label: str, calls: int, queries: list[str], written: list[Doc], size: int, model,
            before: Path | None) -> None:
    """Serve ``store`` (a postgresql:// URL or a directory) with the real model and time the calls; with
    ``before``, a second server runs that checkout's code on the same store, and each call goes to both."""
    from contextlib import ExitStack

    from memdir.server.tokens import TokenFile
    from tests.server.http_process import running_server

    with tempfile.TemporaryDirectory(prefix="memdir-bench-team-") as tmp, ExitStack() as stack:
        tokens = TokenFile(Path(tmp) / "tokens.json")
        token = tokens.create("bench")
        servers = []
        for name, tree in [("this code", None), *([("before", before)] if before else [])]:
            env = {"MEMDIR_HTTP_TOKENS_FILE": str(tokens.path), "MEMDIR_CONFIG": str(Path(tmp) / "memdir.toml"),
                   "MEMDIR_EMBEDDINGS_ENABLED": "true", "HF_HUB_OFFLINE": "1",
                   "PYTHONPATH": str(tree or Path(__file__).resolve().parents[1])}
            if store.startswith("postgresql://"):
                env["MEMDIR_ROOT"], args = str(Path(tmp) / f"root-{len(servers)}"), ["--store", store]
            else:
                env["MEMDIR_ROOT"], args = store, []
            server = stack.enter_context(running_server(args, env=env, cwd=Path(tmp), startup_timeout=600))
            servers.append((name, server.url, server.base))
        took = asyncio.run(timed_calls(servers, token, calls, queries, written, model))
    print(f"\n== {label}: {size:,} entries, {calls} calls each (load {os.getloadavg()[0]:.1f})", flush=True)
    for side, figures in took.items():
        print(f"  -- {side}", flush=True)
        for name, values in figures.items():
            print(f"  {name:<40} {summary(values)}", flush=True)


def recall(url: str, questions: list[str], embedder, count: int) -> None:
    """recall@10 of the store's default vector search against exact search, for ``count`` questions."""
    settings = Settings(root=Path(tempfile.mkdtemp(prefix="memdir-bench-team-")), store=url)
    vectors = embedder.embed(questions[:count])
    exact = exact_top_10(url, vectors, embedder.model_id)
    from memdir.memory import Memory

    with Memory.open(settings, embedder=embedder.inner) as memory:
        found = [set(memory.index.semantic_hits(v, embedder.model_id, 10).top) for v in vectors]
    share = statistics.mean(len(hit & want) / len(want) for hit, want in zip(found, exact))
    print(f"  recall@10 of the default HNSW search vs exact search, {count} questions: {share:.3f}", flush=True)


def near_duplicates(url: str, probes: int = 60) -> None:
    """Whether a short HNSW candidate list finds near-duplicates: for vectors made at cosine 0.86, 0.90 and
    0.95 from ``probes`` stored ones, the share whose near-duplicate (cosine >= 0.85) is among the 4 nearest
    found, and the scan's p50, by ``hnsw.ef_search``."""
    from pgvector.psycopg import register_vector

    rng = np.random.default_rng(3)
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        rows = conn.execute("SELECT embedding FROM entries WHERE embedding IS NOT NULL ORDER BY id LIMIT %s", (probes,)).fetchall()
        queries = []
        for (stored,) in rows:
            vector = np.asarray(stored.to_numpy(), dtype=np.float32)
            for cosine in (0.86, 0.90, 0.95):
                noise = rng.standard_normal(len(vector)).astype(np.float32)
                noise -= noise.dot(vector) * vector
                queries.append(cosine * vector + np.sqrt(1 - cosine**2) * noise / np.linalg.norm(noise))
        for ef in (Settings().storage.hnsw_ef_search, Settings().storage.hnsw_ef_search_duplicates, 20):
            found, took = 0, []
            for query in queries:
                with conn.transaction():
                    conn.execute(f"SET LOCAL hnsw.ef_search = {int(ef)}")
                    started = time.perf_counter()
                    nearest = conn.execute("SELECT 1 - (e.embedding <=> %s) FROM entries e WHERE e.embedding IS NOT NULL"
                                           f" ORDER BY {WALK_ORDER} LIMIT 4", (query, query)).fetchall()
                    took.append(time.perf_counter() - started)
                found += any(cosine >= 0.85 for (cosine,) in nearest)
            print(f"  near-duplicates found with ef_search {ef}: {found} of {len(queries)}; scan p50 "
                  f"{1000 * statistics.median(took):.1f} ms (load {os.getloadavg()[0]:.1f})", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000, 100_000])
    parser.add_argument("--calls", type=int, default=40, help="calls of each kind per store")
    parser.add_argument("--recall-queries", type=int, default=100)
    parser.add_argument("--cluster-dir", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-team-pg")
    parser.add_argument("--store", choices=("postgresql", "directory"), default="postgresql",
                        help="the store measured (directory: a root per size, kept in --cluster-dir)")
    parser.add_argument("--build-only", action="store_true", help="load the stores, measure nothing")
    parser.add_argument("--near-duplicates", action="store_true", help="check the near-duplicate scan's short list")
    parser.add_argument("--before", type=Path, help="a checkout of older code: served beside this code, each call sent to both")
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo's locomo10.json")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-cache")
    args = parser.parse_args(argv)
    bases, questions, embedder = base_vectors(args.cache, args.data)
    gen = TextGenerator(seed=99)
    queries = [f"{question} {' '.join(gen.sample(3))}" for question in questions[: 2 * args.calls + 10]]
    written = notes(args.data)
    if args.store == "directory":
        for n in args.sizes:
            root = ensure_directory(args.cluster_dir, n, bases, embedder.model_id)
            if not args.build_only:
                measure(str(root), "directory store", args.calls, queries, written, n, embedder.inner, args.before)
        return
    from tests.pg_cluster import Cluster

    cluster = Cluster(args.cluster_dir).start(STOCK)  # PostgreSQL's stock configuration
    try:
        for n in args.sizes:
            url = ensure_store(cluster.url(), n, bases, embedder.model_id)
            if not args.build_only:
                if args.calls:
                    measure(url, "PostgreSQL", args.calls, queries, written, n, embedder.inner, args.before)
                if args.near_duplicates:
                    near_duplicates(url)
                if args.recall_queries:
                    recall(url, questions[2 * args.calls:], embedder, args.recall_queries)
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
