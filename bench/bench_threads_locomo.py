"""Working-memory quality on LoCoMo: how much of a question's evidence each context strategy puts in a 2,000-token window.

    python bench/bench_threads_locomo.py [--data ../shared/data/locomo10.json] [--budget 2000] [--root DIR]

Each of the 10 conversations is replayed as one thread (one message per turn,
``"<speaker>: <text>"``, the first speaker as ``user``, the other as ``assistant``),
twice: with the default settings (compaction on, as a user gets it) and with compaction
off (the strategies alone decide). For every question of categories 1-4 with evidence,
ThreadContext is asked for a window of ``--budget`` tokens with the question as its
query, and the share of the question's evidence turns shown verbatim in the window is
recorded. The baseline is the plain "most recent turns that fit". Printed: the mean
share per strategy (and per category) for both settings, and semantic / baseline.

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

from corpora import DEFAULT_LOCOMO, locomo_dialogues  # noqa: E402

from memdir.core.settings import Settings  # noqa: E402
from memdir.threads.context.base import Budget, newest_first, units_of  # noqa: E402
from memdir.threads.manager import ThreadManager  # noqa: E402
from memdir.threads.messages import message  # noqa: E402

STRATEGIES = ("virtual", "fragment", "semantic")


def build_thread(manager: ThreadManager, thread: str, turn_texts: list[str]) -> list[str]:
    """The conversation as a thread (appended once; reused when the log already holds it); chunk id per turn
    (compacted ones included)."""
    if not manager.exists(thread) or manager.state(thread).turns != len(turn_texts):
        if manager.exists(thread):
            raise SystemExit(f"{manager.folder / thread} holds another conversation: remove --root and run again.")
        first = turn_texts[0].split(":", 1)[0]
        for text in turn_texts:
            role = "user" if text.split(":", 1)[0] == first else "assistant"
            manager.append(thread, message(role, text, max_bytes=manager.settings.storage.max_entry_size))
    return [chunk.id for chunk in manager.state(thread).timeline()]


def most_recent(manager: ThreadManager, thread: str, budget: int) -> set[str]:
    """The baseline: the newest turns that fit the budget."""
    pieces = newest_first(units_of(manager.state(thread).timeline()), Budget(budget), budget)
    return {chunk_id for piece in pieces for chunk_id in piece.chunk_ids}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-threads-locomo")
    args = parser.parse_args()

    from memdir.embeddings import load_embedder

    base = Settings(root=args.root)
    embedder = load_embedder(model_dir=base.embeddings.model_dir, cache_dir=base.storage.cache_dir)
    settings_of = {"default": Settings(root=args.root),
                   "compaction off": Settings(root=args.root, thread_compact_chunks=0, thread_compact_tokens=0)}
    managers = {name: ThreadManager(settings.store_root, settings, lambda: embedder) for name, settings in settings_of.items()}
    conversations = locomo_dialogues(args.data)
    shares: dict[tuple[str, str], list[float]] = defaultdict(list)
    by_category: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    tokens: dict[tuple[str, str], list[int]] = defaultdict(list)
    started = time.perf_counter()
    for conv in conversations:
        for setting, manager in managers.items():
            thread = f"locomo-{conv.sample_id}" + ("" if setting == "default" else "-uncompacted")
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
                    shares[(setting, name)].append(share)
                    by_category[(setting, name, category)].append(share)
                    if used is not None:
                        tokens[(setting, name)].append(used)
        print(f"{conv.sample_id}: {len(conv.turn_texts)} turns, {len(conv.questions)} questions "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)

    questions = len(shares[("default", "most recent")])
    print(f"\nLoCoMo, {len(conversations)} conversations, {questions} questions (categories 1-4), "
          f"{args.budget}-token window, model {embedder.model_id}")
    print(f"{'settings':<15} {'strategy':<12} {'evidence share':>15} {'cat 1':>7} {'cat 2':>7} {'cat 3':>7} {'cat 4':>7} "
          f"{'median tokens':>14}")
    for setting in managers:
        for name in ("most recent", *STRATEGIES):
            cats = " ".join(f"{statistics.fmean(by_category[(setting, name, c)]):7.3f}" for c in (1, 2, 3, 4))
            used = tokens[(setting, name)]
            median_tokens = f"{statistics.median(used):14.0f}" if used else f"{'-':>14}"
            print(f"{setting:<15} {name:<12} {statistics.fmean(shares[(setting, name)]):15.3f} {cats} {median_tokens}")
    ratio = statistics.fmean(shares[("default", "semantic")]) / max(statistics.fmean(shares[("default", "most recent")]), 1e-9)
    print(f"\nsemantic / most recent, default settings: {ratio:.2f}x (target >= 2x)")


if __name__ == "__main__":
    main()
