"""Many clients, one `memdir serve --http`: throughput, latency, nothing lost, auth probes refused.

Usage::

    python bench/bench_http.py [--clients 16] [--ops 200] [--repeat 1] [--no-model] [--store URL]

Starts a real ``memdir serve --http`` on loopback (a fresh temporary root, or ``--store URL``
passed on to the server for another store, e.g. PostgreSQL), with a token. ``--clients``
MCP clients (the official SDK over streamable HTTP, one session each) then run ``--ops``
operations each at once, a seeded mix of 25% MemoryWrite (a new entry of its own), 35%
MemoryRead (any entry written so far), 20% MemoryEdit (one of its own entries, read first
when its session has not read the latest version) and 20% MemorySearch. Meanwhile a prober
sends ``--probes`` rounds (one a second) of requests that must be refused: no token, a wrong
token, a revoked token, a foreign Host, a foreign Origin.

Printed: operations per second, p50 / p95 latency overall and per operation, errors, the
server's CPU time per operation (user + system, from ``/proc``: what the machine's load does not
change, unlike the latencies) and this process's (the clients'), then
the check that nothing was lost (each entry read back through a new session must hold
exactly the content its last acknowledged write or edit gave it), and in the closing line
the number of auth probes refused. Timings on this shared 2-core machine are noisy; with
``--repeat`` > 1 the medians over the runs are printed too. The real model embeds each
write unless ``--no-model``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx2

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memdir.server.tokens import TokenFile  # noqa: E402
from tests.server.http_process import mcp_client, running_server  # noqa: E402

WORDS = ("deploy release pipeline staging production rollback incident latency cache index vector token session "
         "editor window review merge branch commit schema migration backup restore metric alert dashboard").split()
MIX = (("write", 25), ("read", 35), ("edit", 20), ("search", 20))
PROBE_KINDS = ("no token", "wrong token", "revoked token", "foreign Host", "foreign Origin")


@dataclass
class Run:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    expected: dict[str, str] = field(default_factory=dict)
    """Every acknowledged entry's content as its last acknowledged write or edit left it."""
    probes_sent: int = 0
    probes_refused: int = 0
    seconds: float = 0.0
    server_cpu: float = 0.0
    """CPU seconds the server process used during the run (user + system)."""
    clients_cpu: float = 0.0
    """The same for this process (the clients and the prober)."""


def content_of(path: str, revision: int, rng: random.Random) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(40))
    return f"Entry {path} revision {revision}: {words}."


def text(result) -> str:
    return "\n".join(block.text for block in result.content)


async def client_run(url: str, token: str, number: int, ops: int, seed: int, run: Run) -> None:
    rng = random.Random(seed * 1000 + number)
    kinds = [kind for kind, weight in MIX for _ in range(weight)]
    own: dict[str, int] = {}  # this client's entries and their revisions
    read_revision: dict[str, int] = {}  # what this session last read of its own entries

    async def timed(kind: str, tool: str, arguments: dict) -> object | None:
        started = time.perf_counter()
        result = await client.call_tool(tool, arguments)
        run.latencies[kind].append(time.perf_counter() - started)
        if result.is_error:
            run.errors.append(f"{tool} {arguments.get('file_path', arguments.get('query'))}: {text(result)[:200]}")
            return None
        return result

    async with mcp_client(url, token) as client:
        await client.list_tools()
        for step in range(ops):
            kind = rng.choice(kinds) if own else "write"
            if kind == "write":
                path = f"fact/bench/client-{number:02d}/entry-{step:03d}.md"
                content = content_of(path, 0, rng)
                entry = {"file_path": path, "content": content, "title": f"Client {number} entry {step}", "type": "fact",
                         "tags": ["bench", f"client-{number}"], "related": [], "domain": "bench"}
                if await timed("write", "MemoryWrite", entry):
                    own[path] = 0
                    run.expected[path] = content
            elif kind == "read":
                path = rng.choice(sorted(run.expected))
                result = await timed("read", "MemoryRead", {"file_path": path})
                if result is not None and path in own:
                    read_revision[path] = own[path]
            elif kind == "edit":
                path = rng.choice(sorted(own))
                if read_revision.get(path) != own[path]:  # read-before-edit: this session reads it first
                    if await timed("read", "MemoryRead", {"file_path": path}) is None:
                        continue
                    read_revision[path] = own[path]
                revision = own[path]
                old, new = f"revision {revision}:", f"revision {revision + 1}:"
                if await timed("edit", "MemoryEdit", {"file_path": path, "old_string": old, "new_string": new}):
                    own[path] = read_revision[path] = revision + 1
                    run.expected[path] = run.expected[path].replace(old, new, 1)
            else:
                query = " ".join(rng.sample(WORDS, 3))
                await timed("search", "MemorySearch", {"query": query, "top_k": 5})


async def prober(url: str, tokens: TokenFile, good: str, stop: anyio.Event, run: Run, rounds: int) -> None:
    """Requests that must be refused (401/403): ``rounds`` of one of each kind, a second apart, while the clients run."""
    revoked = tokens.create("bench-revoked")
    tokens.revoke("bench-revoked")
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}}
    bad = {
        "no token": {},
        "wrong token": {"authorization": "Bearer mdt_not-a-token"},
        "revoked token": {"authorization": f"Bearer {revoked}"},
        "foreign Host": {"authorization": f"Bearer {good}", "host": "attacker.example"},
        "foreign Origin": {"authorization": f"Bearer {good}", "origin": "http://attacker.example"},
    }
    async with httpx2.AsyncClient(timeout=30) as http:
        for _ in range(rounds):
            for kind in PROBE_KINDS:
                response = await http.post(url, json=body, headers={**headers, **bad[kind]})
                run.probes_sent += 1
                run.probes_refused += response.status_code in (401, 403)
            with anyio.move_on_after(1.0):
                await stop.wait()


async def verify(url: str, token: str, run: Run) -> tuple[int, list[str]]:
    """(entries checked, entries lost or changed): each acknowledged entry read back through a new session."""
    bad = []
    async with mcp_client(url, token) as client:
        for path, content in sorted(run.expected.items()):
            result = await client.call_tool("MemoryRead", {"file_path": path})
            if result.is_error or content not in text(result).replace("\n", ""):
                bad.append(path)
    return len(run.expected), bad


async def one_run(url: str, tokens: TokenFile, token: str, clients: int, ops: int, seed: int, probes: int) -> Run:
    run = Run()
    stop = anyio.Event()
    started = time.perf_counter()
    async with anyio.create_task_group() as outer:
        outer.start_soon(prober, url, tokens, token, stop, run, probes)
        async with anyio.create_task_group() as group:
            for number in range(clients):
                group.start_soon(client_run, url, token, number, ops, seed, run)
        run.seconds = time.perf_counter() - started
        stop.set()
    return run


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process ``pid`` has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def report(run: Run, checked: int, lost: list[str]) -> dict[str, float]:
    every = [value for values in run.latencies.values() for value in values]
    figures = {"ops_per_s": len(every) / run.seconds, "p50_ms": 1000 * statistics.median(every),
               "p95_ms": 1000 * percentile(every, 0.95), "server_cpu_ms_per_op": 1000 * run.server_cpu / len(every)}
    print(f"  {len(every)} operations in {run.seconds:.1f} s: {figures['ops_per_s']:.1f} ops/s, "
          f"p50 {figures['p50_ms']:.1f} ms, p95 {figures['p95_ms']:.1f} ms, {len(run.errors)} errors; "
          f"server CPU {figures['server_cpu_ms_per_op']:.1f} ms per operation, clients' "
          f"{1000 * run.clients_cpu / len(every):.1f} ms (load {os.getloadavg()[0]:.1f})")
    for kind, values in sorted(run.latencies.items()):
        print(f"    {kind:<6} {len(values):>5}  p50 {1000 * statistics.median(values):7.1f} ms  "
              f"p95 {1000 * percentile(values, 0.95):7.1f} ms")
    for error in run.errors[:5]:
        print(f"    error: {error}")
    print(f"  nothing lost: {checked - len(lost)} of {checked} acknowledged entries read back with their content"
          + (f"; LOST OR CHANGED: {lost[:5]}" if lost else ""))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--ops", type=int, default=200, help="operations per client")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--probes", type=int, default=20, help="rounds of refused-auth probes (5 kinds each)")
    parser.add_argument("--no-model", action="store_true", help="keyword search only (no embedding per write)")
    parser.add_argument("--store", help="passed to the server as --store (another storage adapter); default a temp root")
    args = parser.parse_args()

    totals = defaultdict(list)
    refused = sent = lost_total = errors_total = 0
    for repeat in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="memdir-bench-http-") as tmp:
            tokens = TokenFile(Path(tmp) / "tokens.json")
            token = tokens.create("bench")
            env = {"MEMDIR_HTTP_TOKENS_FILE": str(tokens.path), "MEMDIR_CONFIG": str(Path(tmp) / "memdir.toml"),
                   "MEMDIR_EMBEDDINGS_ENABLED": "false" if args.no_model else "true", "MEMDIR_ROOT": str(Path(tmp) / "root")}
            server_args = ["--store", args.store] if args.store else []
            with running_server(server_args, env=env, cwd=Path(tmp)) as server:
                store = args.store or f"directory {env['MEMDIR_ROOT']}"
                print(f"run {repeat + 1}: {args.clients} clients x {args.ops} ops against {store} "
                      f"({'keyword search' if args.no_model else 'real model'})")
                cpu_before, own_before = cpu_seconds(server.process.pid), cpu_seconds(os.getpid())
                run = anyio.run(one_run, server.url, tokens, token, args.clients, args.ops, args.seed + repeat, args.probes)
                run.server_cpu = cpu_seconds(server.process.pid) - cpu_before
                run.clients_cpu = cpu_seconds(os.getpid()) - own_before
                checked, lost = anyio.run(verify, server.url, token, run)
                if run.errors:  # what the server said about them
                    print("".join(line for line in server.lines if "Traceback" in line or "Error" in line or line.startswith("  ")))
            for name, value in report(run, checked, lost).items():
                totals[name].append(value)
            refused, sent = refused + run.probes_refused, sent + run.probes_sent
            lost_total += len(lost)
            errors_total += len(run.errors)
    if args.repeat > 1:
        print("medians: " + ", ".join(f"{name} {statistics.median(values):.1f}" for name, values in totals.items()))
    median = {name: statistics.median(values) for name, values in totals.items()}
    print(f"bench_http: {args.clients} clients x {args.ops} ops: {median['ops_per_s']:.1f} ops/s, "
          f"p50 {median['p50_ms']:.1f} ms, p95 {median['p95_ms']:.1f} ms, "
          f"server CPU {median['server_cpu_ms_per_op']:.1f} ms/op, {errors_total} errors, "
          f"{lost_total} lost, auth probes refused {refused}/{sent}")
    if lost_total or errors_total or refused != sent:
        raise SystemExit(1)


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
