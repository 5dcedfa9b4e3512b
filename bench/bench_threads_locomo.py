"""Working-memory quality on LoCoMo: how much of a question's evidence each context strategy puts in a 2,000-token window.

    python bench/bench_threads_locomo.py [--data ../shared/data/locomo10.json] [--budget 2000] [--root DIR]

Each of the 10 conversations is replayed as one thread (one message per turn,
``"<speaker>: <text>"``, the first speaker as ``user``, the other as ``assistant``;
compaction off, so the strategies alone decide). For every question of categories 1-4
with evidence, ThreadContext is asked for a window of ``--budget`` tokens with the
question as its query, and the share of the question's evidence turns shown verbatim in
the window is recorded. The baseline is the plain "most recent turns that fit". Printed:
the mean share per strategy (and per category), and semantic / baseline.

The threads and the embeddings (turns and questions, real all-MiniLM-L6-v2) persist under
``--root`` (default: a folder in the system temp dir), so a second run embeds nothing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_recall_locomo import DEFAULT_DATA, load_locomo  # noqa: E402

from memdir.core.settings import Settings  # noqa: E402
from memdir.threads.context.base import Budget, newest_first, units_of  # noqa: E402
from memdir.threads.manager import ThreadManager  # noqa: E402
from memdir.threads.messages import message  # noqa: E402

STRATEGIES = ("virtual", "fragment", "semantic")


def build_thread(manager: ThreadManager, thread: str, turn_texts: list[str]) -> list[str]:
    """The conversation as a thread (appended once; reused when the log already holds it); chunk id per turn."""
    if not manager.exists(thread) or len(manager.state(thread).chunks) != len(turn_texts):
        if manager.exists(thread):
            raise SystemExit(f"{manager.folder / thread} holds another conversation: remove --root and run again.")
        first = turn_texts[0].split(":", 1)[0]
        for text in turn_texts:
            role = "user" if text.split(":", 1)[0] == first else "assistant"
            manager.append(thread, message(role, text, max_bytes=manager.settings.max_entry_size))
    return [chunk.id for chunk in manager.state(thread).chunks]


def most_recent(manager: ThreadManager, thread: str, budget: int) -> set[str]:
    """The baseline: the newest turns that fit the budget."""
    pieces = newest_first(units_of(manager.state(thread).timeline()), Budget(budget), budget)
    return {chunk_id for piece in pieces for chunk_id in piece.chunk_ids}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-threads-locomo")
    args = parser.parse_args()

    from memdir.embeddings import load_embedder

    settings = Settings(root=args.root, thread_compact_chunks=0, thread_compact_tokens=0)
    embedder = load_embedder(model_dir=settings.model_dir, cache_dir=settings.cache_dir)
    manager = ThreadManager(settings.store_root, settings, lambda: embedder)
    conversations = load_locomo(args.data)
    shares: dict[str, list[float]] = defaultdict(list)
    by_category: dict[tuple[str, int], list[float]] = defaultdict(list)
    tokens: dict[str, list[int]] = defaultdict(list)
    started = time.perf_counter()
    for conv in conversations:
        thread = f"locomo-{conv.sample_id}"
        chunk_ids = build_thread(manager, thread, conv.turn_texts)
        dia_of = dict(zip(chunk_ids, conv.turn_ids))
        baseline = {dia_of[c] for c in most_recent(manager, thread, args.budget)}
        for question, evidence, category in conv.questions:
            results = {"most recent": (baseline, None)}
            for strategy in STRATEGIES:
                manager.set_strategy(thread, strategy)
                window = manager.context(thread, args.budget, question)
                assert window.tokens <= args.budget
                results[strategy] = ({dia_of[c] for c in window.shown if c in dia_of}, window.tokens)
            for name, (shown, used) in results.items():
                share = len(shown & evidence) / len(evidence)
                shares[name].append(share)
                by_category[(name, category)].append(share)
                if used is not None:
                    tokens[name].append(used)
        print(f"{conv.sample_id}: {len(conv.turn_texts)} turns, {len(conv.questions)} questions "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)

    questions = len(shares["most recent"])
    print(f"\nLoCoMo, {len(conversations)} conversations, {questions} questions (categories 1-4), "
          f"{args.budget}-token window, model {embedder.model_id}")
    print(f"{'strategy':<12} {'evidence share':>15} {'cat 1':>7} {'cat 2':>7} {'cat 3':>7} {'cat 4':>7} {'median tokens':>14}")
    for name in ("most recent", *STRATEGIES):
        cats = " ".join(f"{statistics.fmean(by_category[(name, c)]):7.3f}" for c in (1, 2, 3, 4))
        median_tokens = f"{statistics.median(tokens[name]):14.0f}" if tokens[name] else f"{'-':>14}"
        print(f"{name:<12} {statistics.fmean(shares[name]):15.3f} {cats} {median_tokens}")
    ratio = statistics.fmean(shares["semantic"]) / max(statistics.fmean(shares["most recent"]), 1e-9)
    print(f"\nsemantic / most recent: {ratio:.2f}x (target >= 2x)")


if __name__ == "__main__":
    main()
