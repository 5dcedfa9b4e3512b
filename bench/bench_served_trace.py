"""Where a served search's time goes: one call traced on the wall clock from the client's send to its receive.

    python bench/bench_served_trace.py [--sizes 2000 100000] [--calls 100] [--tool MemorySearch] [--before DIR]
                                       [--cluster-dir DIR] [--data locomo10.json]

A real ``memdir serve --http`` (the real model) serves the PostgreSQL stores `bench_team_scale.py`
loaded (``bench_<size>`` schemas of the cluster in ``--cluster-dir``, run that first), and one MCP
client (the official SDK) sends ``--calls`` calls of ``--tool`` (MemorySearch or MemoryDiscover), each
a LoCoMo question, one after another with a short pause, so that what runs after an answer (the
prefetch of the results) is done before the next call. The server process is started with a
``sitecustomize`` of this benchmark (written to a temporary directory that only the server's
``PYTHONPATH`` holds; nothing of it is in memdir) that notes the time (``CLOCK_MONOTONIC``, one clock
for both processes) at each layer a call crosses: uvicorn's HTTP protocol receiving bytes, the gate,
the SDK's transport and request runner, the tool, the memory's reader thread, the search's keyword
side, its vector walk (with the candidates' rows), the query's embedding on its own thread, the
snippets' contents, the JSON answer and its last bytes sent; the client notes its call, its send and
its answer. Per call, the phases between those notes; printed: each phase's median and mean.

Each note costs a few microseconds, ~40 of them a call: the totals are a little above an untraced
call's. With ``--before DIR`` (a checkout of older code) a second server runs that code on the same
store and the calls alternate between the two, so both are traced under the same load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_team_scale import STOCK, model_ready, schema_url  # noqa: E402
from corpora import DEFAULT_LOCOMO, locomo_corpora  # noqa: E402

TRACER = r'''
"""Notes the time at each layer a served call crosses (see bench/bench_served_trace.py)."""
import functools, importlib.abc, importlib.util, inspect, os, sys, threading, time

_out = open(os.environ["MEMDIR_TRACE_FILE"], "a", buffering=1 << 20)
_named = threading.local()


def mark(name):
    if not getattr(_named, "done", False):  # each thread's id and name, once: what its CPU time is counted under
        _named.done = True
        _out.write(f"thread {threading.get_native_id()} {threading.current_thread().name}\n")
    _out.write(f"{time.monotonic_ns()} {name}\n")


def wrap(owner, attr, label):
    fn = getattr(owner, attr, None)
    if fn is None:  # (older code without it)
        return
    if inspect.iscoroutinefunction(fn):
        async def noted(*args, **kwargs):
            mark(label + ">")
            try:
                return await fn(*args, **kwargs)
            finally:
                mark(label + "<")
    else:
        def noted(*args, **kwargs):
            mark(label + ">")
            try:
                return fn(*args, **kwargs)
            finally:
                mark(label + "<")
    setattr(owner, attr, functools.wraps(fn)(noted))


def patch():
    from mcp.server import runner, streamable_http
    from memdir.memory.facade import Memory
    from memdir.search import hybrid
    from memdir.server import http_guard, http_limits, state
    from memdir.storage.postgres import index

    wrap(http_limits.LimitedH11Protocol, "data_received", "http bytes")
    guarded = http_guard.GuardMiddleware.__call__

    async def guard(self, scope, receive, send):
        if scope.get("type") != "http" or scope.get("method") != "POST":
            return await guarded(self, scope, receive, send)
        mark("gate>")

        async def sending(message):
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                mark("body sent")
                _out.flush()

        await guarded(self, scope, receive, sending)

    http_guard.GuardMiddleware.__call__ = guard
    wrap(streamable_http.StreamableHTTPServerTransport, "_handle_post_request", "transport")
    wrap(streamable_http.StreamableHTTPServerTransport, "_create_json_response", "json answer")
    wrap(runner.ServerRunner, "_on_request", "request runner")
    wrap(state.MemoryHost, "run", "memory host")
    wrap(state.MemoryHost, "_call", "reader thread")
    for name in ("search", "contents"):
        wrap(Memory, name, "memory." + name)
    for name in ("keyword_hits", "semantic_hits"):
        wrap(index.PostgresIndex, name, name)
    wrap(hybrid.HybridSearcher, "_query_vector", "embedding")
    wrap(Memory, "prefetch", "prefetch")  # (not a phase: its thread's name, for its CPU time)


class AfterHttp(importlib.abc.MetaPathFinder):
    """Patches once `memdir.server.http` (imported by `memdir serve --http` before it serves) is loaded."""

    def find_spec(self, name, path, target=None):
        if name != "memdir.server.http":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            patch()

        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, AfterHttp())
'''

PHASES = [
    ("client: call -> request sent", "call>", "send>"),
    ("request -> server's first bytes", "send>", "http bytes>"),
    ("HTTP parse, gate, body", "http bytes>", "transport>"),
    ("SDK: transport -> request runner", "transport>", "request runner>"),
    ("SDK: runner -> memory host (validation, tool)", "request runner>", "memory host>"),
    ("hop to the reader thread", "memory host>", "reader thread>"),
    ("reader thread (the tool's function)", "reader thread>", "reader thread<"),
    ("  before the search (catching up, BEGIN)", "reader thread>", "memory.search>"),
    ("  the search", "memory.search>", "memory.search<"),
    ("    keyword side", "keyword_hits>", "keyword_hits<"),
    ("    after it, waiting for the embedding", "keyword_hits<", "semantic_hits>"),
    ("    vector walk + candidates' rows", "semantic_hits>", "semantic_hits<"),
    ("    ranking", "semantic_hits<", "memory.search<"),
    ("  after the search (COMMIT, contents, snippets)", "memory.search<", "reader thread<"),
    ("  the query's embedding (its own thread)", "embedding>", "embedding<"),
    ("  its start, after the call's first bytes", "http bytes>", "embedding>"),
    ("hop back to the event loop", "reader thread<", "memory host<"),
    ("SDK: result -> JSON answer", "memory host<", "json answer<"),
    ("JSON answer -> last bytes sent", "json answer<", "body sent"),
    ("client: last bytes sent -> result", "body sent", "call<"),
    ("whole call, client side", "call>", "call<"),
]


def phases(notes: list[tuple[int, str]]) -> dict[str, list[float]]:
    """Per phase of `PHASES`, its length in each call (ms): the calls are what lies between the client's
    ``call>`` and ``call<`` notes; each phase from its first note in a call to the first of its end after that."""
    calls: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] | None = None
    for note in sorted(notes):
        if note[1] == "call>":
            current = [note]
        elif current is not None:
            current.append(note)
            if note[1] == "call<":
                calls.append(current)
                current = None
    found: dict[str, list[float]] = {}
    for call in calls:
        for name, start, end in PHASES:
            begun = next((t for t, what in call if what == start), None)
            ended = next((t for t, what in call if what == end and begun is not None and t >= begun), None)
            if begun is not None and ended is not None:
                found.setdefault(name, []).append((ended - begun) / 1e6)
    return found


TICKS = os.sysconf("SC_CLK_TCK")


def threads_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each thread of process ``pid``, by thread id."""
    found = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            fields = Path(f"/proc/{pid}/task/{tid}/stat").read_text().rpartition(")")[2].split()
        except OSError:  # (a thread that ended meanwhile)
            continue
        found[int(tid)] = (int(fields[11]) + int(fields[12])) / TICKS
    return found


def postgres_cpu(data_dir: Path) -> float:
    """CPU seconds of the cluster's processes: its postmaster (``postmaster.pid``) and every child of it."""
    postmaster = int((data_dir / "postmaster.pid").read_text().split()[0])
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(entry) == postmaster or int(fields[1]) == postmaster:
            total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


@dataclass
class Served:
    """One traced server: its notes (the client's, then the server's), and the CPU its calls cost."""

    label: str
    url: str
    pid: int
    trace: Path
    notes: list[tuple[int, str]] = field(default_factory=list)
    cpu: dict[int, float] = field(default_factory=dict)
    """CPU seconds of each of the server's threads over the traced calls."""
    postgres: float = 0.0
    """CPU seconds of PostgreSQL's processes during its calls (and the pause after each)."""


async def traced(servers: list[Served], token: str, tool: str, questions: list[str], calls: int, data_dir: Path) -> None:
    """``calls`` calls of ``tool`` to each server, alternating; their notes and CPU kept in each `Served`."""
    import httpx2

    from tests.server.http_process import mcp_client

    noting: list[tuple[int, str]] = []  # the notes of the call under way

    def note(name: str) -> None:
        noting.append((time.monotonic_ns(), name))

    send = httpx2.AsyncClient.send

    async def sending(self: httpx2.AsyncClient, *args: Any, **kwargs: Any) -> httpx2.Response:
        note("send>")
        return await send(self, *args, **kwargs)

    httpx2.AsyncClient.send = sending  # type: ignore[method-assign]  # (this process's client only)
    argument = "query" if tool == "MemorySearch" else "message"
    async with AsyncExitStack() as stack:
        clients = [(served, await stack.enter_async_context(mcp_client(served.url, token))) for served in servers]
        for _, client in clients:
            await model_ready(client, 120)  # (searches embed once it is)
            for warm in questions[-10:]:
                await client.call_tool(tool, {argument: warm})
        started = {served.label: threads_cpu(served.pid) for served in servers}
        for i in range(calls):
            for served, client in clients if i % 2 == 0 else clients[::-1]:
                noting.clear()
                postgres = postgres_cpu(data_dir)
                note("call>")
                result = await client.call_tool(tool, {argument: questions[i % (len(questions) - 10)]})
                note("call<")
                if result.is_error:
                    raise SystemExit(f"{tool} failed: {result.content[0].text}")
                served.notes.extend(noting)
                await asyncio.sleep(0.05)  # what runs after an answer (its results' prefetch) is done before the next call
                served.postgres += postgres_cpu(data_dir) - postgres
        for served in servers:
            served.cpu = {tid: seconds - started[served.label].get(tid, 0.0) for tid, seconds in threads_cpu(served.pid).items()}


def server_notes(served: Served) -> tuple[list[tuple[int, str]], dict[int, str]]:
    """The server's notes, and the names of its threads that noted any (by thread id)."""
    notes, names = [], {}
    for line in served.trace.read_text().splitlines():
        first, _, rest = line.partition(" ")
        if first == "thread":
            tid, _, name = rest.partition(" ")
            names[int(tid)] = name
        else:
            notes.append((int(first), rest))
    return notes, names


def cpu_by_thread(served: Served, names: dict[int, str], calls: int) -> dict[str, float]:
    """ms of CPU per call by thread (pools' threads together; the threads that noted nothing: `OTHER_THREADS`)."""
    found: dict[str, float] = {}
    for tid, seconds in served.cpu.items():
        name = re.sub(r"_\d+$", "", names.get(tid, OTHER_THREADS))
        found[name] = found.get(name, 0.0) + 1000 * seconds / calls
    return found


OTHER_THREADS = "other threads (onnxruntime's pool)"


def measure(url: str, size: int, tool: str, calls: int, questions: list[str], before: Path | None, data_dir: Path) -> None:
    from memdir.server.tokens import TokenFile
    from tests.server.http_process import running_server

    with tempfile.TemporaryDirectory(prefix="memdir-bench-trace-") as tmp, ExitStack() as stack:
        tracer = Path(tmp) / "tracer"
        tracer.mkdir()
        (tracer / "sitecustomize.py").write_text(TRACER)
        tokens = TokenFile(Path(tmp) / "tokens.json")
        token = tokens.create("bench")
        servers, running = [], []
        for n, (label, tree) in enumerate([("this code", Path(__file__).resolve().parents[1]),
                                           *([("before", before)] if before else [])]):
            trace = Path(tmp) / f"trace-{n}.log"
            env = {"MEMDIR_HTTP_TOKENS_FILE": str(tokens.path), "MEMDIR_CONFIG": str(Path(tmp) / "memdir.toml"),
                   "MEMDIR_EMBEDDINGS_ENABLED": "true", "HF_HUB_OFFLINE": "1", "MEMDIR_ROOT": str(Path(tmp) / f"root-{n}"),
                   "PYTHONPATH": f"{tracer}{os.pathsep}{tree}", "MEMDIR_TRACE_FILE": str(trace)}
            server = stack.enter_context(running_server(["--store", url], env=env, cwd=Path(tmp), startup_timeout=600))
            servers.append(Served(label, server.url, server.process.pid, trace))
            running.append(server)
        load = os.getloadavg()[0]
        asyncio.run(traced(servers, token, tool, questions, calls, data_dir))
        for server in running:
            server.stop()  # (its notes are all written)
        print(f"\n== {tool}, PostgreSQL {size:,} entries, {calls} calls each (load {load:.1f} -> {os.getloadavg()[0]:.1f})",
              flush=True)
        found, cpu = {}, {}
        for served in servers:
            notes, names = server_notes(served)
            found[served.label] = phases(notes + served.notes)
            cpu[served.label] = cpu_by_thread(served, names, calls)
        labels = list(found)
        print(f"  {'phase (ms)':<48}" + "".join(f"{label + ' p50':>16}{'mean':>8}" for label in labels))
        for name, _, _ in PHASES:
            cells = [(statistics.median(values), statistics.mean(values)) if (values := found[label].get(name)) else None
                     for label in labels]
            if any(cells):
                print(f"  {name:<48}" + "".join(f"{cell[0]:>16.2f}{cell[1]:>8.2f}" if cell else f"{'-':>24}"
                                                  for cell in cells), flush=True)
        print(f"  {'CPU per call (ms)':<48}" + "".join(f"{label:>24}" for label in labels))
        threads = sorted({name for by in cpu.values() for name in by}, key=lambda name: -cpu[labels[0]].get(name, 0.0))
        for name in threads:
            print(f"  {'  server: ' + name:<48}" + "".join(f"{cpu[label].get(name, 0.0):>24.2f}" for label in labels))
        print(f"  {'  server, all threads':<48}" + "".join(f"{sum(cpu[label].values()):>24.2f}" for label in labels))
        print(f"  {'  PostgreSQL (its calls and the pause after)':<48}"
              + "".join(f"{1000 * served.postgres / calls:>24.2f}" for served in servers), flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--tool", choices=("MemorySearch", "MemoryDiscover"), default="MemorySearch")
    parser.add_argument("--before", type=Path, help="a checkout of older code, traced beside this code")
    parser.add_argument("--cluster-dir", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-team-pg",
                        help="the cluster bench_team_scale.py loaded")
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO, help="LoCoMo's locomo10.json")
    args = parser.parse_args(argv)
    questions = [query.text for corpus in locomo_corpora(args.data) for query in corpus.queries][: args.calls + 10]
    from tests.pg_cluster import Cluster

    cluster = Cluster(args.cluster_dir).start(STOCK)
    try:
        for n in args.sizes:
            measure(schema_url(cluster.url(), n), n, args.tool, args.calls, questions, args.before, cluster.data)
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
