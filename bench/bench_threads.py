"""Working-memory threads: append throughput, and ThreadContext latency on a 10,000-event thread.

    python bench/bench_threads.py [--events 10000] [--appends 500] [--repeats 40] [--root DIR]

* append: ``--appends`` messages through `ThreadManager.append` (checked, locked, one
  fsynced line each) into a fresh thread; median and p90 per append, and appends/s.
* ThreadContext: the tool function (`memdir.tools.thread_context`, what the MCP tool runs)
  with a 2,000-token budget on a thread of ``--events`` events (messages, and the
  compactions the default settings run), for each strategy;
  ``--repeats`` calls with different queries, after one warm-up call (which reads the log
  and, for semantic, embeds the thread once: cached on disk under ``.memdir/``). The
  semantic figure includes embedding the query with the real model. Targets: p50 <= 20 ms
  (virtual, fragment), <= 40 ms (semantic). Then the same on a fork of the thread with one
  message appended before each call (a live conversation: the new message is embedded then).

Default settings throughout (compaction on). The 10K-event thread is written once under
``--root`` (default: a folder in the system temp dir) in the log's own format, event by
event through the same builders the manager uses, so reruns skip building it and its
embeddings.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.threads import compaction
from memdir.threads.log import encode, now_iso
from memdir.threads.manager import manager_for
from memdir.threads.messages import message
from memdir.threads.model import ThreadState
from memdir.threads.reducers import apply, replay
from memdir.tools.thread_context import thread_context

WORDS = ("garden roses invoice flight Lisbon laptop battery birthday cake tax return deploy pipeline pytest failure "
         "database index migration sister Paris museum recipe pasta budget meeting Monday report bug fix release "
         "dentist appointment running shoes marathon training guitar lesson camera lens hiking trail weather").split()
STRATEGIES = ("virtual", "fragment", "semantic")


def sentence(rng: random.Random, turn: int) -> str:
    return f"Turn {turn}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30))) + "."


def write_thread(manager, thread: str, events: int) -> None:
    """``events`` events in the log format, built by the manager's own message builder and compacted as the manager
    compacts with the default settings (extractive summaries), without an fsync per line."""
    log = manager.folder / thread / "events.jsonl"
    if log.exists():
        return
    rng = random.Random(7)
    state = ThreadState()
    lines = []
    turn = -1
    while len(lines) < events:  # messages and the compactions they set off
        turn += 1
        role = "user" if turn % 2 == 0 else "assistant"
        checked = message(role, sentence(rng, turn), max_bytes=manager.settings.max_entry_size)
        event = checked.event(state.seq + 1, now_iso(), state)
        state = apply(state, event)
        lines.append(encode(event))
        plan = compaction.plan(state, manager.settings)
        if compaction.due(plan, manager.settings):
            summary, source = compaction.summary_for(plan.chunks, manager.settings, None)
            event = compaction.compaction_event(plan, summary, source)(state.seq + 1, now_iso(), state)
            state = apply(state, event)
            lines.append(encode(event))
    log.parent.mkdir(parents=True, exist_ok=True)
    partial = log.with_suffix(".partial")
    partial.write_bytes(b"".join(lines))
    partial.replace(log)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--appends", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-threads")
    args = parser.parse_args()

    settings = Settings(root=args.root)
    with Memory.open(settings) as memory:
        manager = manager_for(memory)
        rng = random.Random(1)
        with tempfile.TemporaryDirectory(prefix="memdir-append-") as tmp:
            fresh = manager_for(stack := Memory.open(Settings(root=tmp), load_model=False))
            times = []
            for turn in range(args.appends):
                checked = message("user", sentence(rng, turn), max_bytes=settings.max_entry_size)
                start = time.perf_counter()
                fresh.append("append-bench", checked)
                times.append(time.perf_counter() - start)
            stack.close()
        print(f"append ({args.appends} messages, one fsynced line each): median {statistics.median(times) * 1000:.2f} ms, "
              f"p90 {percentile(times, 0.9) * 1000:.2f} ms, {len(times) / sum(times):,.0f} appends/s")

        thread = f"bench-{args.events}"
        write_thread(manager, thread, args.events)
        times = []
        for _ in range(5):  # what a new process pays on its first read of the thread
            start = time.perf_counter()
            replay(manager.events(thread))
            times.append(time.perf_counter() - start)
        print(f"replay of the {args.events:,}-event log (a new process's first read): median {statistics.median(times) * 1000:.0f} ms")
        memory.model.get()  # load the model before timing (a server loads it at start)
        queries = [" ".join(random.Random(q).choice(WORDS) for _ in range(6)) for q in range(args.repeats)]
        for strategy in STRATEGIES:
            manager.set_strategy(thread, strategy)
            start = time.perf_counter()
            thread_context(memory, thread, args.budget, "warm up")
            warm = time.perf_counter() - start
            times = []
            for query in queries:
                start = time.perf_counter()
                thread_context(memory, thread, args.budget, query)
                times.append(time.perf_counter() - start)
            target = 40 if strategy == "semantic" else 20
            print(f"ThreadContext {strategy:9s} on {args.events:,} events, {args.budget}-token budget: "
                  f"p50 {statistics.median(times) * 1000:.1f} ms, p90 {percentile(times, 0.9) * 1000:.1f} ms "
                  f"(target p50 <= {target} ms; first call {warm:.2f} s)")
        live = f"{thread}-live"
        manager.fork(thread, live)
        try:
            for strategy in STRATEGIES:
                manager.set_strategy(live, strategy)
                thread_context(memory, live, args.budget, "warm up")
                times = []
                for turn, query in enumerate(queries[:20]):
                    manager.append(live, message("user", sentence(rng, turn), max_bytes=settings.max_entry_size))
                    start = time.perf_counter()
                    thread_context(memory, live, args.budget, query)
                    times.append(time.perf_counter() - start)
                print(f"ThreadContext {strategy:9s} right after each append (live thread): "
                      f"p50 {statistics.median(times) * 1000:.1f} ms, p90 {percentile(times, 0.9) * 1000:.1f} ms")
        finally:
            shutil.rmtree(manager.folder / live, ignore_errors=True)


if __name__ == "__main__":
    main()
