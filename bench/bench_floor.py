"""Each memdir figure beside its floor on this machine, and the ratio, in one run.

Usage::

    python bench/bench_floor.py [--entries 10000] [--runs 15] [--searches 2000] [--bulk 400]
                                [--sizes 10000 100000] [--only start write bulk search rss] [--before TREE]
                                [--real-vectors DIR]

Every row times memdir and its floor alternately, call by call, in the same run, so a busy
machine slows both alike: the ratio is the figure to trust. Medians and p95 are printed with
the load average. The rows and their floors:

* start: ``memdir serve`` spawn -> ``tools/list`` against a bare one-tool server on the same
  MCP SDK, and the CPU each server has used by then (load-proof); ``memdir discover`` with no server (cold) against ``memdir --help``; ``memdir
  discover`` answered by a running server against a stdlib-only script that sends the same
  request over the same socket (Python's start plus the round trip).
* write: `Memory.write` of a ~57-word entry against the model embedding its text alone (with
  ``--before``, the older code's `Memory.write` and this code's too, each in a process of its own, in
  the same turns); the
  MCP MemoryWrite tool (official client, stdio) against `Memory.write` in this process.
* bulk: `Memory.write_many` of new entries in chunks of 100 against the model embedding the
  same texts alone, in entries/s; ``memdir import`` of a folder of hand-written markdown entries then ``memdir rebuild
  --missing-only`` (the batched embedding), in entries/s, against 3x mcp-memory-service's
  store_batch rate measured beside memdir's (12.9/s; the reference, not re-measured here), and
  the model alone embedding the imported entries' texts in one batched call right after (with
  ``--before``, the older code's import + rebuild of the same folder right after this code's).
* search: `HybridSearcher.search` with the query vector given against numpy's exact scan
  (the fastest of ``matrix @ q``, ``einsum`` and ``vecdot``, then the top 10) on the same matrix, on the
  synthetic roots of `bench_search` (--sizes; random unit vectors, or with ``--real-vectors`` the model's
  vectors of real texts cached by the recall benches, and held-out ones as the queries: random vectors
  have no few dominant directions, so the directory store's first pass is never used on them); the MCP MemorySearch tool against MemoryDiscover
  on the same server and queries.
* rss: the served process's resident memory after ``--searches`` MemorySearch calls, and the most it
  ever held (its model load); with ``--before`` the older code serves the same root right after.

The real root (``--entries`` entries of four types, embedded with the real model) is built
once under ``--cache`` (`bench_discover_hook.cached_root`), as are the synthetic ones.

Each tree measured is byte-compiled first, as ``pip install`` compiles an installed package:
with ``PYTHONDONTWRITEBYTECODE`` set (or a tree nobody ran yet) every process would otherwise
compile memdir's modules from source, a cost no user's command pays.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import functools
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

import anyio
import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path[:0] = [str(REPO), str(HERE)]

import bench_discover_hook  # noqa: E402
import bench_search  # noqa: E402
from bench_serve_startup import BARE_SERVER  # noqa: E402
from mcp import Client, StdioServerParameters  # noqa: E402

from memdir.core import hook_socket  # noqa: E402

PROMPT = bench_discover_hook.PROMPT
REFERENCE_BATCH_RATE = 12.9
"""mcp-memory-service 12.4.0's store_batch, entries/s, measured beside memdir (see the module docstring)."""
QUERIES = [
    "how do I debug a container that keeps restarting", "rollback the postgres schema migration",
    "profile the react component rendering", "kubernetes cluster monitoring setup", "cache the search ranking",
    "review the billing invoice token", "index the git branch history", "security review of the deploy fixture",
]
FLOOR_CLIENT = """
import json, socket, sys
request = sys.stdin.readline()
with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
    s.connect(sys.argv[1]); s.sendall(request.encode()); chunks = []
    while not chunks or not chunks[-1].endswith(b"\\n"):
        chunks.append(s.recv(65536))
answer = json.loads(b"".join(chunks))
print(json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": answer["text"]}}))
"""
rows: list[tuple[str, str, str, str, str]] = []


def stats(ms: list[float]) -> tuple[float, float]:
    ordered = sorted(ms)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def row(what: str, memdir_ms: list[float], floor: str, floor_ms: list[float], target: str, *, cpu_too: bool = False) -> None:
    """One row of the table; ``cpu_too`` adds the CPU time beside the wall time (see `Timings`)."""
    (m50, m95), (f50, f95) = stats(memdir_ms), stats(floor_ms)
    cpu = ""
    if cpu_too and isinstance(memdir_ms, Timings) and isinstance(floor_ms, Timings):
        c50, f_c50 = statistics.median(memdir_ms.cpu), statistics.median(floor_ms.cpu)
        cpu = f"; CPU {c50:.1f} vs {f_c50:.1f} ms = {c50 / f_c50:.2f}x"
    rows.append((what, f"{m50:8.1f} / {m95:8.1f} ms", floor, f"{f50:8.1f} / {f95:8.1f} ms",
                 f"{m50 / f50:5.2f}x (target {target}), load {os.getloadavg()[0]:.1f}{cpu}"))
    print(f"  {what}: {m50:.1f} ms vs {floor} {f50:.1f} ms = {m50 / f50:.2f}x{cpu}", flush=True)


class Timings(list):
    """Wall milliseconds per call, and (``cpu``) the CPU milliseconds per call beside them, of this process
    and of the commands it ran and waited for: on a loaded machine a call longer than a scheduler
    slice waits for a core, and its wall time says more about the machine than about the code; its
    CPU time does not."""

    def __init__(self) -> None:
        super().__init__()
        self.cpu: list[float] = []


def interleaved(runs: int, *pairs: Callable[[], object]) -> list[Timings]:
    """Milliseconds of each callable, called in turn ``runs`` times (after one warm-up round)."""
    for fn in pairs:
        fn()
    out = [Timings() for _ in pairs]
    for _ in range(runs):
        for times, fn in zip(out, pairs):
            started, cpu = time.perf_counter(), cpu_ms()
            fn()
            times.append((time.perf_counter() - started) * 1000)
            times.cpu.append(cpu_ms() - cpu)
    return out


def cpu_ms() -> float:
    """CPU milliseconds (user + system) of this process and of the children it waited for."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (time.process_time() + children.ru_utime + children.ru_stime) * 1000


def env_for(root: Path, cache: Path) -> dict[str, str]:
    return {**os.environ, "MEMDIR_ROOT": str(root), "MEMDIR_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO),
            "MEMDIR_CONFIG": str(cache / "no-config.toml")}


def run(command: list[str], env: dict[str, str], stdin: str = "") -> Callable[[], object]:
    """``command`` as a callable; run from the cache folder, since ``python -m`` imports from the
    current folder before ``PYTHONPATH`` (`--before` sets the latter)."""
    def call() -> object:
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, env=env, check=False,
                              cwd=env["MEMDIR_CACHE_DIR"])
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command[-3:])} failed: {done.stderr[-500:]}")
        return done.stdout
    return call


# ----------------------------------------------------------------------------- start
async def handshake(params: StdioServerParameters, cpu: list[float] | None = None) -> None:
    """Start the server, list its tools; with ``cpu``, append the CPU milliseconds it has used by then."""
    async with Client(params) as client:
        await client.list_tools()
        if cpu is not None:
            cpu.append(children_cpu_ms())


def children_cpu_ms() -> float:
    """CPU milliseconds (user + system) used so far by this process's running children, from /proc.

    On a loaded machine a server's start waits for a core much of the time; the CPU it spends
    until it answers says what the code costs, whatever the load."""
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            if int(fields[1]) == os.getpid():
                total += int(fields[11]) + int(fields[12])
    return total * 1000 / os.sysconf("SC_CLK_TCK")


def bench_start(root: Path, cache: Path, runs: int, before: Path | None = None) -> None:
    """The start rows; with ``before`` (a checkout of older code) its serve and cold discover too, in the same turns."""
    env = env_for(root, cache)
    trees = [env] + ([{**env, "PYTHONPATH": str(before)}] if before else [])
    serve = [StdioServerParameters(command=sys.executable, args=["-m", "memdir", "serve"], env=e, cwd=str(root)) for e in trees]
    bare = StdioServerParameters(command=sys.executable, args=["-c", BARE_SERVER], env=env, cwd=str(root))
    cpu: list[list[float]] = [[] for _ in range(len(serve) + 1)]
    served, floor, *older = interleaved(runs, *(functools.partial(anyio.run, handshake, p, used)
                                                for p, used in zip([*serve[:1], bare, *serve[1:]], cpu)))
    row("serve: spawn -> tools/list", served, "bare one-tool SDK server", floor, "<= 1.1x")
    if older:
        row("  the same, code before", older[0], "bare one-tool SDK server", floor, "<= 1.1x")
    served_cpu, floor_cpu, *older_cpu = (used[1:] for used in cpu)  # (without the warm-up round)
    row("  serve: its CPU until tools/list", served_cpu, "the bare server's", floor_cpu, "<= 1.1x")
    if older_cpu:
        row("  the same, code before", older_cpu[0], "the bare server's", floor_cpu, "<= 1.1x")

    payload = json.dumps({"session_id": "bench", "cwd": str(cache), "hook_event_name": "UserPromptSubmit", "prompt": PROMPT})
    discover = [sys.executable, "-m", "memdir", "discover", "--root", str(root)]
    cold, help_, *older = interleaved(runs, run(discover, env, payload), run([sys.executable, "-m", "memdir", "--help"], env),
                                      *(run(discover, e, payload) for e in trees[1:]))
    row("discover hook, cold", cold, "memdir --help", help_, "<= 2.5x", cpu_too=True)
    if older:
        row("  the same, code before", older[0], "memdir --help", help_, "<= 2.5x", cpu_too=True)

    with running_server(root, env):
        request = json.dumps({"v": hook_socket.VERSION, "kind": "discover", "root": hook_socket.canonical_root(root),
                              "prompt": PROMPT, "include_skills": True}) + "\n"
        floor_client = [sys.executable, "-c", FLOOR_CLIENT, str(hook_socket.socket_path(root))]
        hook, socket_floor = interleaved(runs, run(discover, env, payload), run(floor_client, env, request))
    row("discover hook, server running", hook, "python + the socket round trip", socket_floor, "<= 1.5x")


@contextlib.contextmanager
def running_server(root: Path, env: dict[str, str]) -> Iterator[None]:
    with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet), bench_discover_hook.running_server(root, env):
        yield


# ----------------------------------------------------------------------------- write
WRITE_WORKER = """
import sys, tempfile, time
from pathlib import Path
from memdir.core.settings import Settings  # (from the older tree, first on PYTHONPATH)
from memdir.memory import Memory
sys.path.append(sys.argv[1])
import bench_floor
with tempfile.TemporaryDirectory(dir=sys.argv[2]) as tmp, \\
        Memory.open(Settings(root=Path(tmp) / "local", cache_dir=Path(sys.argv[2]) / "model")) as memory:
    memory.model.get()
    write = bench_floor.writer(memory, bench_floor.bench_words())
    print("ready", flush=True)
    for line in sys.stdin:
        started, cpu = time.perf_counter(), time.process_time()
        write()
        print((time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000, flush=True)
"""
WRITE_META = {"type": "fact", "tags": ["bench", "write"], "domain": "bench"}


def bench_words() -> list[str]:
    """The vocabulary the rows' entries are drawn from."""
    words = bench_discover_hook.TOPICS + bench_discover_hook.VERBS + bench_discover_hook.NOUNS
    return [random.Random(i).choice(words) for i in range(5_000)]


def writer(memory, words: list[str]) -> Callable[[], None]:
    """A root of 200 entries in ``memory``, and a callable writing one more ~57-word entry to it per call."""
    rng = random.Random(3)
    for i in range(200):  # a root with entries, not an empty one
        memory.write(f"fact/filler/f{i}", entry_text(words, rng), title=f"Filler {i}", metadata={"type": "fact"})
    counter = iter(range(10**6))

    def write() -> None:
        i = next(counter)
        memory.write(f"fact/bench/w{i}", entry_text(words, rng), title=f"Entry {i}", metadata=WRITE_META)
    return write


def entry_text(words: list[str], rng: random.Random) -> str:
    start = rng.randrange(0, len(words) - 60)
    return " ".join(words[start:start + 57])


def bench_write(cache: Path, runs: int, words: list[str], before: Path | None = None) -> None:
    """The write rows; with ``before`` (a checkout of older code) its `Memory.write` too, in a process of
    its own answering in the same turns (its own wall and CPU time, as it measured them), and this
    code's the same way in another, the two asked in turns of alternating order: neither shares a
    process with the floor, so their ratio to each other is a fair one."""
    from memdir.core.settings import Settings
    from memdir.embeddings.text import searchable_text
    from memdir.memory import Memory

    rng = random.Random(4)
    with tempfile.TemporaryDirectory(dir=cache) as tmp, contextlib.ExitStack() as stack:
        settings = Settings(root=Path(tmp) / "local", cache_dir=cache / "model")
        served_root = Path(tmp) / "served"
        older = [stack.enter_context(subprocess.Popen(
            [sys.executable, "-c", WRITE_WORKER, str(HERE), str(cache)], text=True, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, cwd=cache, env={**os.environ, "PYTHONPATH": str(tree)})) for tree in ([before, REPO] if before else [])]
        with Memory.open(settings) as memory:
            embedder = memory.model.get()
            if embedder is None:
                raise SystemExit(f"no model: {memory.model.reason}")
            write = writer(memory, words)
            for worker in older:
                assert worker.stdout is not None
                if worker.stdout.readline().strip() != "ready":
                    raise SystemExit("a write worker failed")

            def embed() -> None:
                text = searchable_text("Entry", WRITE_META, entry_text(words, rng), settings.embeddings.max_chars)
                embedder.embed([text])

            answered = [Timings() for _ in older]
            turns = iter(range(10**6))

            def ask() -> None:
                order = list(zip(older, answered))
                for worker, times in order if next(turns) % 2 else reversed(order):
                    assert worker.stdin is not None and worker.stdout is not None
                    worker.stdin.write("\n")
                    worker.stdin.flush()
                    wall, cpu = map(float, worker.stdout.readline().split())
                    times.append(wall)
                    times.cpu.append(cpu)

            writes, embeds, *_ = interleaved(runs * 3, write, embed, *([ask] if older else []))
            row("Memory.write, ~57 words", writes, "the embedding alone", embeds, "<= 1.2x", cpu_too=True)
            if older:
                for times, label in zip(answered, ("code before", "this code")):
                    times[:], times.cpu[:] = times[1:], times.cpu[1:]  # (without the warm-up round)
                    row(f"  the same, {label} (own process)", times, "the embedding alone", embeds, "<= 1.2x", cpu_too=True)
                for worker in older:
                    assert worker.stdin is not None
                    worker.stdin.close()

            async def mcp_writes() -> list[list[float]]:
                env = env_for(served_root, cache / "model")
                params = StdioServerParameters(command=sys.executable, args=["-m", "memdir", "serve"], env=env, cwd=tmp)
                async with Client(params) as client:
                    await client.call_tool("MemoryWrite", mcp_args(0))
                    out: list[list[float]] = [[], []]
                    for j in range(runs * 3):
                        started = time.perf_counter()
                        result = await client.call_tool("MemoryWrite", mcp_args(j + 1))
                        out[0].append((time.perf_counter() - started) * 1000)
                        if result.is_error:
                            raise SystemExit(f"MemoryWrite failed: {result.content}")
                        started = time.perf_counter()
                        write()
                        out[1].append((time.perf_counter() - started) * 1000)
                    return out

            def mcp_args(j: int) -> dict[str, object]:
                return {"file_path": f"fact/bench/m{j}", "content": entry_text(words, rng), "title": f"Entry {j}",
                        "type": "fact", "tags": ["bench", "write"], "related": None, "domain": "bench"}

            served, local = anyio.run(mcp_writes)
            row("MCP MemoryWrite", served, "Memory.write", local, "<= 2x")


# ----------------------------------------------------------------------------- bulk
def bench_bulk(cache: Path, count: int, words: list[str], before: Path | None = None) -> None:
    """The bulk row; with ``before`` (a checkout of older code) its import + rebuild of the same folder too,
    right after this code's."""
    rng = random.Random(5)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        source = Path(tmp) / "notes"
        for i in range(count):
            folder = source / ("concept", "fact", "skill", "experience")[i % 4] / f"topic{i % 20}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"note{i}.md").write_text(entry_text(words, rng) + "\n", encoding="utf-8")
        rates = []
        for tree in [REPO, *([before] if before else [])]:
            target = Path(tmp) / f"imported-{len(rates)}"
            env = {**env_for(target, cache / "model"), "PYTHONPATH": str(tree)}
            started = time.perf_counter()
            run([sys.executable, "-m", "memdir", "import", str(source)], env)()
            run([sys.executable, "-m", "memdir", "rebuild", "--missing-only"], env)()
            rates.append(count / (time.perf_counter() - started))
        model_rate = model_alone_rate(target, cache / "model")
    rate = rates[0]
    older = f"; the code before {rates[1]:.1f}/s" if before else ""
    rows.append((f"bulk: import + rebuild --missing-only, {count} entries", f"{rate:8.1f} entries/s",
                 "3x mcp-memory-service store_batch", f"{3 * REFERENCE_BATCH_RATE:8.1f} entries/s",
                 f"{rate / (3 * REFERENCE_BATCH_RATE):5.2f}x of it (target >= 1x); the model alone on the same "
                 f"entries {model_rate:.1f}/s{older}, load {os.getloadavg()[0]:.1f}"))
    print(f"  bulk: {rate:.1f} entries/s{older}; the model alone on the same entries {model_rate:.1f}/s", flush=True)


def model_alone_rate(root: Path, model_cache: Path) -> float:
    """Entries/s of the model embedding the searchable texts of every entry under ``root`` in one batched call."""
    from memdir.core.settings import Settings
    from memdir.embeddings.text import searchable_text
    from memdir.memory import Memory

    with Memory.open(Settings(root=root, cache_dir=model_cache)) as memory:
        embedder = memory.model.get()
        if embedder is None:
            raise SystemExit(f"no model: {memory.model.reason}")
        max_chars, summary = memory.settings.embeddings.max_chars, memory.settings.embeddings.summary
        texts = [searchable_text(e.title, e.metadata, e.content, max_chars, summary=summary)
                 for e in (memory.read(info.path) for info in memory.list(include_virtual=False))]
        embedder.embed(texts[:8])  # loaded and warm
        started = time.perf_counter()
        embedder.embed(texts)
        return len(texts) / (time.perf_counter() - started)


def bench_write_many(cache: Path, count: int, words: list[str], chunk: int = 100) -> None:
    """`Memory.write_many` of ``count`` new entries in chunks of ``chunk``, interleaved chunk by chunk
    with the model embedding the same kind of texts alone (what an importer's batch costs)."""
    from memdir.core.settings import Settings
    from memdir.embeddings.text import searchable_text
    from memdir.memory import Memory, NewEntry

    rng = random.Random(7)
    meta = {"type": "fact", "tags": ["bench", "bulk"], "domain": "bench"}
    with tempfile.TemporaryDirectory(dir=cache) as tmp, \
            Memory.open(Settings(root=Path(tmp) / "bulk", cache_dir=cache / "model")) as memory:
        embedder = memory.model.get()
        if embedder is None:
            raise SystemExit(f"no model: {memory.model.reason}")
        counter = iter(range(10**6))

        def batch() -> list[NewEntry]:
            return [NewEntry(f"fact/bulk/t{i % 20}/n{i}", entry_text(words, rng), f"Note {i}", meta)
                    for i in (next(counter) for _ in range(chunk))]

        def embed() -> None:
            embedder.embed([searchable_text(w.title, meta, w.content, memory.settings.embeddings.max_chars) for w in batch()])

        writes, embeds = interleaved(max(1, count // chunk), lambda: memory.write_many(batch()), embed)
    rate, floor = chunk * 1000 / statistics.median(writes), chunk * 1000 / statistics.median(embeds)
    rows.append((f"Memory.write_many, chunks of {chunk}", f"{rate:8.1f} entries/s", "the batched embedding alone",
                 f"{floor:8.1f} entries/s", f"{floor / rate:5.2f}x its time; {rate / (3 * REFERENCE_BATCH_RATE):.2f}x "
                 f"3x mcp-memory-service (target >= 1x), load {os.getloadavg()[0]:.1f}"))
    print(f"  write_many: {rate:.1f} entries/s vs the embedding alone {floor:.1f}/s", flush=True)


# ----------------------------------------------------------------------------- search
SEARCH_WORKER = """
import sys, time
from pathlib import Path
from memdir.core.settings import Settings  # (from the older tree, first on PYTHONPATH)
from memdir.search.hybrid import HybridSearcher
from memdir.storage.directory.index import DerivedIndex
sys.path.append(sys.argv[1])
import bench_floor
searcher = HybridSearcher(DerivedIndex(Path(sys.argv[2])), Settings())
queries = bench_floor.search_queries(int(sys.argv[3]), Path(sys.argv[4]) if sys.argv[4] != "-" else None)
for line in sys.stdin:
    text, vector = queries[int(line)]
    started, cpu = time.perf_counter(), time.process_time()
    searcher.search(text, query_vector=vector, query_model=bench_floor.bench_search.MODEL)
    print((time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000, flush=True)
"""


def bench_search_in_process(cache: Path, sizes: list[int], runs: int, before: Path | None = None,
                            real: Path | None = None) -> None:
    """The in-process search rows; with ``before`` (a checkout of older code) its search too, and this
    code's once more, each in a process of its own answering in the same turns (one call of each side
    after the other): the CPU time of those two compares alike (this process's also counts the
    OpenBLAS threads that ``matrix @ q`` leaves spinning). ``real``: the stores' and queries' vectors are
    the model's, cached there (`real_vectors`)."""
    from memdir.core.settings import Settings
    from memdir.search.hybrid import HybridSearcher
    from memdir.storage.directory.index import DerivedIndex

    for n in sizes:
        root = bench_search.cached_root(cache, n, None if real is None else real_vectors(real, n)[0])
        settings = Settings()
        index = DerivedIndex(root, context_window=settings.search.context_window)  # (as a store opens it)
        searcher = HybridSearcher(index, settings)
        _, matrix = index.vectors.snapshot()
        with contextlib.ExitStack() as stack:
            workers = [stack.enter_context(subprocess.Popen(
                [sys.executable, "-c", SEARCH_WORKER, str(HERE), str(root), str(runs * 20), str(real or "-")], text=True,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=cache, env={**os.environ, "PYTHONPATH": str(tree)}))
                for tree in ([REPO, before] if before is not None else [])]
            timings = search_beside_scan(searcher, matrix, search_queries(runs * 20, real), workers)
        floor = min(timings[1:4], key=statistics.median)
        target = "<= 1.5x" if n <= 10_000 else "<= 1.1x"
        what = f"search in process, vector given, {n:,}{'' if real is None else ', real vectors'}"
        row(what, timings[0], "numpy exact scan + top 10", floor, target, cpu_too=True)
        for label, times in zip(["  this code, a process of its own", "  the same, code before"], timings[4:]):
            row(label, times, "numpy exact scan + top 10", floor, target, cpu_too=True)
        index.close()


def search_queries(runs: int, real: Path | None = None) -> list[tuple[str, np.ndarray]]:
    """The in-process search rows' queries: (text, vector), each asked three times (``real``: `real_vectors`')."""
    gen, rng = bench_search.TextGenerator(seed=99), np.random.default_rng(5)
    vectors = bench_search.unit_vectors(rng, runs)
    if real is not None:
        held_out = real_vectors(real, 0)[1]
        vectors = held_out[np.arange(runs) % len(held_out)]
    return list(zip(gen.texts(rng.integers(4, 12, runs)), vectors)) * 3


REAL_QUERIES = 2_000
"""Cached vectors held out of the real-vector stores, asked as queries."""


@functools.cache
def real_vectors(cache: Path, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(``n`` store vectors, the held-out query vectors) from the model's vectors the recall benches cached
    in ``cache`` (`corpora.every_vector`, ~81K): beyond those, noisy copies of them (cosine ~0.95)."""
    import corpora

    every = corpora.every_vector(cache)
    store, queries = every[:-REAL_QUERIES], every[-REAL_QUERIES:]
    if n > len(store):
        rng = np.random.default_rng(23)
        copies = store[rng.integers(0, len(store), n - len(store))]
        copies = copies + rng.standard_normal(copies.shape).astype(np.float32) * (0.33 / np.sqrt(copies.shape[1]))
        store = np.vstack([store, corpora.unit(copies)])
    return store[:n], queries


def search_beside_scan(searcher, matrix: np.ndarray, queries: list[tuple[str, np.ndarray]],
                       workers: Sequence[subprocess.Popen] = ()) -> list[Timings]:
    """Hybrid search, ``matrix @ q``, ``einsum`` and ``vecdot``, each + top 10, on the same queries in turn; then
    each of ``workers`` (`SEARCH_WORKER` processes) searching the same query, last in each turn, in turns
    of order (their own wall and CPU time, as they measured them)."""
    runs = len(queries) // 3
    at = -1

    def hybrid() -> None:
        nonlocal at
        at += 1
        searcher.search(queries[at][0], query_vector=queries[at][1], query_model=bench_search.MODEL)

    def top10(scores: np.ndarray) -> np.ndarray:
        best = np.argpartition(scores, len(scores) - 10)[-10:]
        return best[np.argsort(-scores[best])]

    def asking(worker: subprocess.Popen, times: Timings) -> Callable[[], None]:
        def ask() -> None:
            assert worker.stdin is not None and worker.stdout is not None
            worker.stdin.write(f"{at}\n")
            worker.stdin.flush()
            wall, cpu = map(float, worker.stdout.readline().split())
            times.append(wall)
            times.cpu.append(cpu)
        return ask

    answered = [Timings() for _ in workers]
    asks = [asking(worker, times) for worker, times in zip(workers, answered)]

    def ask_workers() -> None:  # first one worker, then the other, turn by turn: the first after the floors is slower
        for ask in asks if at % 2 else asks[::-1]:
            ask()

    steps = [hybrid, lambda: top10(matrix @ queries[at][1]), lambda: top10(np.einsum("ij,j->i", matrix, queries[at][1])),
             lambda: top10(np.vecdot(matrix, queries[at][1]))]
    timings = interleaved(runs, *steps, *([ask_workers] if workers else []))
    for times in answered:  # (as the workers measured them, without the warm-up round's)
        times[:], times.cpu[:] = times[1:], times.cpu[1:]
    return timings[:4] + answered


class Served(NamedTuple):
    """What `served_searches` measured of one server."""

    search: list[float]  # MemorySearch ms
    discover: list[float]  # MemoryDiscover ms, same queries
    first: float  # RSS MB after the first round
    after: float  # RSS MB after all the searches
    peak: float  # the most RSS MB the process ever had (its model load, most often)


async def served_searches(root: Path, cache: Path, runs: int, searches: int, tree: Path = REPO) -> Served:
    """Serve ``root`` with the code of ``tree``: MemorySearch and MemoryDiscover in turns, then ``searches``
    more MemorySearch calls, and the server's resident memory."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "memdir", "serve"],
                                   env={**env_for(root, cache), "PYTHONPATH": str(tree)}, cwd=str(root))
    async with Client(params) as client:
        server = _child_server()
        while (await client.call_tool("MemorySearch", {"query": "warm up"})).is_error:
            await anyio.sleep(0.2)
        search, discover = [], []
        for i in range(runs * 5):
            query = QUERIES[i % len(QUERIES)]
            for name, args, times in (("MemorySearch", {"query": query}, search),
                                      ("MemoryDiscover", {"message": query}, discover)):
                started = time.perf_counter()
                await client.call_tool(name, args)
                times.append((time.perf_counter() - started) * 1000)
        first = _memory_mb(server)
        for i in range(searches):
            await client.call_tool("MemorySearch", {"query": f"{QUERIES[i % len(QUERIES)]} {i}"})
        return Served(search, discover, first, _memory_mb(server), _memory_mb(server, "VmHWM"))


def _child_server() -> int:
    """The pid of the server the MCP client spawned (this process's only Python child)."""
    children = [int(pid) for task in Path("/proc/self/task").iterdir()
                for pid in (task / "children").read_text().split()]
    return children[-1]


def _memory_mb(pid: int, field: str = "VmRSS") -> float:
    """A process's resident memory now (``VmRSS``) or at its most (``VmHWM``), in MB."""
    status = Path(f"/proc/{pid}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith(f"{field}:")) / 1024


# ----------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000, help="entries of the real root (start, MCP search, rss)")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--searches", type=int, default=10_000, help="MemorySearch calls before the RSS is read")
    parser.add_argument("--bulk", type=int, default=400, help="entries imported by the bulk row")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="synthetic roots searched in process")
    parser.add_argument("--only", nargs="+", default=["start", "write", "bulk", "search", "rss"])
    parser.add_argument("--before", type=Path, help="a checkout of older code, run beside this one in the start, write, bulk "
                        "and search rows (and served after it in the rss row)")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-floor")
    parser.add_argument("--real-vectors", type=Path, metavar="DIR", help="the search rows' entries and queries carry the"
                        " model's vectors the recall benches cached in DIR (default: random unit vectors)")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)
    words = bench_words()
    os.environ["MEMDIR_CACHE_DIR"] = str(args.cache / "model")
    for tree in [REPO, *([args.before] if args.before else [])]:
        compileall.compile_dir(tree / "memdir", quiet=1)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at the start", flush=True)
    root = None
    if {"start", "rss"} & set(args.only):
        root = bench_discover_hook.cached_root(args.cache, args.entries)
    if "start" in args.only:
        bench_start(root, args.cache / "model", args.runs, args.before)
    if "write" in args.only:
        bench_write(args.cache, args.runs, words, args.before)
    if "bulk" in args.only:
        bench_write_many(args.cache, args.bulk, words)
        bench_bulk(args.cache, args.bulk, words, args.before)
    if "search" in args.only:
        bench_search_in_process(args.cache, args.sizes, args.runs, args.before, args.real_vectors)
    if "rss" in args.only:
        assert root is not None  # (built above for the rss row)
        served = anyio.run(served_searches, root, args.cache / "model", args.runs, args.searches)
        (s50, s95), (d50, d95) = stats(served.search), stats(served.discover)
        rows.append(("MCP MemorySearch", f"{s50:8.1f} / {s95:8.1f} ms", "MemoryDiscover, same queries",
                     f"{d50:8.1f} / {d95:8.1f} ms", f"{s50 - d50:+5.1f} ms (target <= +2 ms), load {os.getloadavg()[0]:.1f}"))
        older = [anyio.run(served_searches, root, args.cache / "model", args.runs, args.searches, args.before)] if args.before else []
        for what, measured in zip([f"served RSS after {args.searches} MemorySearch", "  the same, code before (served after)"],
                                  [served, *older]):
            rows.append((what, f"{measured.after:8.0f} MB", "target", "     250 MB",
                         f"{measured.after / 250:5.2f}x ({measured.first:.0f} MB after the first {args.runs * 5}; peak "
                         f"{measured.peak:.0f} MB), load {os.getloadavg()[0]:.1f}"))
    print(f"\n{'what':<44} {'memdir p50 / p95':<24} {'floor':<34} {'floor p50 / p95':<24} ratio")
    for what, figure, floor, floor_figure, ratio in rows:
        print(f"{what:<44} {figure:<24} {floor:<34} {floor_figure:<24} {ratio}")


if __name__ == "__main__":
    main()
