"""Working-memory threads: append latency, and ThreadContext latency on long threads, on either store.

    python bench/bench_threads.py [--events 10000] [--appends 500] [--repeats 40] [--root DIR]
                                  [--postgres | --store postgresql://...] [--against DIR]

* append: ``--appends`` messages through `ThreadManager.append` (checked, locked, written:
  one fsynced line in a directory, one committed row in PostgreSQL) into a fresh thread;
  median and p90 per append, and appends/s, beside the disk's own time for a line written
  and synced next to each append, before or after it in turn (what no append can go below).
  Then a tenth as many first appends, each creating a thread.
* ThreadContext: the tool function (`memdir.tools.thread_context`, what the MCP tool runs)
  with a 2,000-token budget on a thread of each ``--events`` size (messages, and the
  compactions the default settings run), for each strategy; ``--repeats`` calls with
  different queries, after one warm-up call (which reads the log and, for semantic, embeds
  the turns: cached on disk under ``.memdir/``). The semantic figure includes embedding the
  query with the real model. Targets: p50 <= 20 ms (virtual, fragment), <= 40 ms (semantic).
  Then the same on a fork of the thread with one message appended before each call (a live
  conversation; with semantic, the new message is embedded as it is appended, on a thread
  of its own, while the call runs).

* ``--against DIR`` (another checkout of memdir, e.g. ``git worktree add /tmp/before HEAD~3``):
  append latency of this code and that one side by side, into a new thread and into the
  thread of each ``--events`` size: two worker processes take turns, 20 appends at a time,
  so both see the same moments of a shared machine's load; each also prints the CPU time an
  append takes (the rest is waiting: for the lock, and for the disk to sync); and, 5 a turn,
  first appends that create a thread each. Then, the same way (5 calls a turn, ``--repeats``
  in all), ThreadContext of each strategy right after an append, each worker on a fork of
  the long thread of its own.

Default settings throughout (compaction on). ``--postgres`` starts a throwaway PostgreSQL +
pgvector cluster (`tests.pg_cluster`); ``--store`` uses a database of yours (an empty one:
the bench writes threads into it). Each long thread is written once, event by event through
the builders the manager uses, and stored in one step (`ThreadLogs.create`), so reruns on
the same ``--root`` skip building it. Messages past the 10,000th repeat earlier texts (but a
turn is embedded with its chunk id, so semantic on a 100K thread embeds 100K texts once).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.threads import compaction
from memdir.threads.log import encode, now_iso
from memdir.threads.manager import ThreadManager, manager_for
from memdir.threads.messages import message
from memdir.threads.model import ThreadState
from memdir.threads.reducers import apply, replay
from memdir.tools.thread_context import thread_context

WORDS = ("garden roses invoice flight Lisbon laptop battery birthday cake tax return deploy pipeline pytest failure "
         "database index migration sister Paris museum recipe pasta budget meeting Monday report bug fix release "
         "dentist appointment running shoes marathon training guitar lesson camera lens hiking trail weather").split()
STRATEGIES = ("virtual", "fragment", "semantic")
DISTINCT_TEXTS = 10_000


def sentence(rng: random.Random, turn: int) -> str:
    return f"Turn {turn}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30))) + "."


def write_thread(manager: ThreadManager, thread: str, events: int) -> None:
    """``events`` events built by the manager's own message builder and compacted as the manager compacts with
    the default settings (extractive summaries), stored in one step."""
    if manager.exists(thread):
        return
    texts = [sentence(random.Random(turn), turn) for turn in range(min(events, DISTINCT_TEXTS))]
    state = ThreadState()
    candidates = compaction.Candidates(manager.settings)
    lines: list[bytes] = []
    turn = -1
    while len(lines) < events:  # messages and the compactions they set off
        turn += 1
        role = "user" if turn % 2 == 0 else "assistant"
        checked = message(role, texts[turn % len(texts)], max_bytes=manager.settings.storage.max_entry_size)
        event = checked.event(state.seq + 1, now_iso(), state)
        state = apply(state, event)
        lines.append(encode(event))
        plan = candidates.plan(state)
        if compaction.due(plan, manager.settings):
            summary, source = compaction.summary_for(plan.chunks, manager.settings, None)
            event = compaction.compaction_event(plan, summary, source)(state.seq + 1, now_iso(), state)
            state = apply(state, event)
            lines.append(encode(event))
    with manager.lock.exclusive():
        manager.logs.create(thread, lines)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def ms(values: list[float]) -> str:
    return f"p50 {statistics.median(values) * 1000:.1f} ms, p90 {percentile(values, 0.9) * 1000:.1f} ms"


def bench_appends(memory: Memory, count: int) -> None:
    manager = manager_for(memory)
    rng = random.Random(1)
    thread = f"append-bench-{time.time_ns()}"
    times: list[float] = []
    floor: list[float] = []
    probe = memory.root / ".memdir" / f"sync-probe-{os.getpid()}"
    probe.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for turn in range(count):
            text = sentence(rng, turn)
            checked = message("user", text, max_bytes=memory.settings.storage.max_entry_size)
            for step in ("append", "disk") if turn % 2 else ("disk", "append"):  # who goes first alternates
                start = time.perf_counter()
                if step == "append":
                    manager.append(thread, checked)
                else:  # the disk alone, at the same moment: one line written and synced
                    os.write(fd, text.encode() + b"\n")
                    os.fdatasync(fd)
                (times if step == "append" else floor).append(time.perf_counter() - start)
    finally:
        os.close(fd)
        probe.unlink()
    print(f"append ({count} messages into a new thread): {ms(times)}, {len(times) / sum(times):,.0f} appends/s; "
          f"the disk alone (a line written and fdatasync'd next to each append): {ms(floor)}", flush=True)
    times = []
    for turn in range(count // 10):
        checked = message("user", sentence(rng, turn), max_bytes=memory.settings.storage.max_entry_size)
        start = time.perf_counter()
        manager.append(f"{thread}-{turn}", checked)
        times.append(time.perf_counter() - start)
    print(f"first append into a new thread (creates it; {len(times)} threads): {ms(times)}", flush=True)


def append_worker(store: str, root: Path, thread: str) -> None:
    """``--worker``: per line of stdin, append as many messages as it says (``20``), or as many each into a new
    thread (``new 5``), or as many messages each followed by a ThreadContext call on a fork of the thread with that strategy (``context semantic 5``); print the
    durations and the CPU time of each append, or the durations of the ThreadContext calls (JSON), per line."""
    with Memory.open(Settings(root=root, store=store)) as memory:
        manager = manager_for(memory)
        if manager.exists(thread):
            manager.state(thread)  # a new process's first read: not timed
        rng = random.Random(time.time_ns())
        live: dict[str, str] = {}
        print("ready", flush=True)
        for turn, line in enumerate(sys.stdin):
            times: list[tuple[float, float]] = []
            words = line.split()
            if words[0] == "context":
                strategy, count = words[1], int(words[2])
                if strategy not in live:
                    memory.model.get()  # loaded before timing, as a server loads it at start
                    live[strategy] = fork = f"{thread}-{strategy}-{time.time_ns()}"
                    manager.fork(thread, fork)
                    manager.set_strategy(fork, strategy)
                    thread_context(memory, fork, 2000, "warm up")
                for _ in range(count):
                    manager.append(live[strategy], message("user", sentence(rng, turn),
                                                           max_bytes=memory.settings.storage.max_entry_size))
                    query = " ".join(rng.choice(WORDS) for _ in range(6))
                    start, cpu = time.perf_counter(), time.process_time()
                    thread_context(memory, live[strategy], 2000, query)
                    times.append((time.perf_counter() - start, time.process_time() - cpu))
                print(json.dumps(times), flush=True)
                continue
            new = words[0] == "new"  # each message into a new thread of its own: the append that creates it
            for n in range(int(words[-1])):
                checked = message("user", sentence(rng, turn), max_bytes=memory.settings.storage.max_entry_size)
                start, cpu = time.perf_counter(), time.process_time()
                manager.append(f"{thread}-new-{time.time_ns()}-{n}" if new else thread, checked)
                times.append((time.perf_counter() - start, time.process_time() - cpu))
            print(json.dumps(times), flush=True)


def bench_against(other: Path, store: str, root: Path, thread: str, rounds: int, request: str = "20",
                  what: str = "append") -> None:
    """Latency of this code and the checkout at ``other``, in worker processes that take turns: appends (``20``
    per turn) or ThreadContext calls right after an append (``context <strategy> <n>``)."""
    trees = {"this code": str(Path(__file__).resolve().parents[1]), str(other): str(other)}
    workers = {name: subprocess.Popen(
        [sys.executable, __file__, "--worker", thread, "--store", store, "--root", str(root)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": tree},
    ) for name, tree in trees.items()}
    times: dict[str, list[list[float]]] = {name: [] for name in trees}
    try:
        for worker in workers.values():
            if worker.stdout is None or worker.stdout.readline().strip() != "ready":
                raise RuntimeError(f"a worker did not start (exit {worker.wait()})")
        for turn in range(rounds):
            for name in sorted(workers, reverse=turn % 2 == 1):  # who goes first alternates
                stdin, stdout = workers[name].stdin, workers[name].stdout
                assert stdin is not None and stdout is not None
                stdin.write(request + "\n")
                stdin.flush()
                times[name].extend(json.loads(stdout.readline()))
    finally:
        for worker in workers.values():
            if worker.stdin is not None:
                worker.stdin.close()
            worker.wait()
    for name, values in times.items():
        cpu = statistics.median(pair[1] for pair in values) * 1000
        print(f"{what} on {thread}, {name}: {ms([pair[0] for pair in values])}; CPU p50 {cpu:.2f} ms", flush=True)


def bench_context(memory: Memory, events: int, repeats: int, budget: int, strategies: list[str]) -> None:
    manager = manager_for(memory)
    thread = f"bench-{events}"
    write_thread(manager, thread, events)
    start = time.perf_counter()
    replay(manager.events(thread))
    print(f"replay of the {events:,}-event log (a new process's first read): {time.perf_counter() - start:.2f} s",
          flush=True)
    asking = random.Random(time.time_ns())  # new queries each run: a query's vector is never in a cache already
    queries = [" ".join(asking.choice(WORDS) for _ in range(6)) for _ in range(repeats)]
    for strategy in strategies:
        manager.set_strategy(thread, strategy)
        start = time.perf_counter()
        thread_context(memory, thread, budget, "warm up")
        warm = time.perf_counter() - start
        times = []
        for query in queries:
            start = time.perf_counter()
            thread_context(memory, thread, budget, query)
            times.append(time.perf_counter() - start)
        target = 40 if strategy == "semantic" else 20
        print(f"ThreadContext {strategy:9s} on {events:,} events, {budget}-token budget: {ms(times)} "
              f"(target p50 <= {target} ms; first call {warm:.2f} s)", flush=True)
    live = f"{thread}-live-{time.time_ns()}"
    manager.fork(thread, live)
    rng = random.Random(2)
    appends: list[float] = []
    for strategy in strategies:
        manager.set_strategy(live, strategy)
        thread_context(memory, live, budget, "warm up")
        times = []
        for turn, query in enumerate(queries[:20]):
            start = time.perf_counter()
            manager.append(live, message("user", sentence(rng, turn), max_bytes=memory.settings.storage.max_entry_size))
            appends.append(time.perf_counter() - start)
            start = time.perf_counter()
            thread_context(memory, live, budget, query)
            times.append(time.perf_counter() - start)
        print(f"ThreadContext {strategy:9s} right after each append (live thread of {events:,}): {ms(times)}", flush=True)
    print(f"append to the live thread of {events:,} events: {ms(appends)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, nargs="+", default=[10_000])
    parser.add_argument("--appends", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--strategies", nargs="+", choices=STRATEGIES, default=list(STRATEGIES),
                        help="semantic embeds every turn once (a 100K thread: 100K texts, each with its chunk id)")
    parser.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-threads")
    parser.add_argument("--store", help="a postgresql:// URL of an empty database")
    parser.add_argument("--postgres", action="store_true", help="start a throwaway PostgreSQL cluster")
    parser.add_argument("--against", type=Path, help="another checkout of memdir to compare append latency with")
    parser.add_argument("--worker", metavar="THREAD", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        append_worker(args.store or "", args.root, args.worker)
        return

    cluster = None
    store = args.store or ""
    if args.postgres:
        from tests.pg_cluster import Cluster

        cluster = Cluster().start()
        store = cluster.url()
    try:
        with Memory.open(Settings(root=args.root, store=store)) as memory:
            print(f"store: {memory.adapter if store else memory.root}", flush=True)
            bench_appends(memory, args.appends)
            if args.against:
                bench_against(args.against, store, args.root, f"append-bench-{time.time_ns()}", args.appends // 40)
                bench_against(args.against, store, args.root, f"append-bench-{time.time_ns()}", args.appends // 40,
                              "new 5", "first append into a new thread (creates it)")
            memory.model.get()  # load the model before timing (a server loads it at start)
            for events in args.events:
                bench_context(memory, events, args.repeats, args.budget, args.strategies)
                if args.against:
                    bench_against(args.against, store, args.root, f"bench-{events}", args.appends // 40)
                    for strategy in args.strategies:
                        bench_against(args.against, store, args.root, f"bench-{events}", args.repeats // 5,
                                      f"context {strategy} 5", f"ThreadContext {strategy} right after an append")
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    main()
