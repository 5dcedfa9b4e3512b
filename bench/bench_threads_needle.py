"""Working memory keeps what it was told: a fact stated once, deep in a long thread, asked for in other words.

    python bench/bench_threads_needle.py [--sizes 200 1000 5000] [--budgets 500 2000] [--root DIR]

For each thread size N, two threads are written through the ThreadAppend tool function with
the default settings (compaction on, as a user gets it): N messages of filler (LoCoMo
dialogue turns, alternating user and assistant), ten of them replaced by facts, the i-th
at message ``(i + 0.5) * N / 10`` (spread over the thread, oldest first). Twenty facts in
all, each stated once, some as "Remember: …", most as plain statements. Then each fact's
question — written with other words than the fact — goes to ThreadContext (semantic
strategy, the question as query) at each budget, and the fact counts as found when its
key (a code, a name, a number) is in the window's text. Printed: found / asked per size
and budget, and the share. Target: >= 95% at 500 and 2,000 tokens.

The facts and questions were written once, before the first run, and not changed after
it; nothing in memdir was tuned on them. The threads and embeddings (real
all-MiniLM-L6-v2) persist under ``--root`` (default: a folder in the system temp dir),
so a second run only asks.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from corpora import DEFAULT_LOCOMO, locomo_dialogues

from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.threads.manager import manager_for
from memdir.tools.thread_append import thread_append
from memdir.tools.thread_context import thread_context
from memdir.tools.thread_control import thread_control

FACTS = (  # (statement, question in other words, key that must appear in the window)
    ("Remember: the launch code is PURPLE-42.", "What code do we use to launch?", "PURPLE-42"),
    ("The staging database lives on db-7.internal, port 6432.", "Which host and port is the staging DB on?",
     "db-7.internal"),
    ("Our on-call rotation switches every Wednesday at 10:00 UTC.", "When does the on-call shift hand over?",
     "Wednesday at 10:00"),
    ("Remember: the Wi-Fi password in the lab is tangerine-lighthouse.", "How do I get on the lab's wireless network?",
     "tangerine-lighthouse"),
    ("The invoice for the Berlin conference was paid with the card ending 4471.",
     "Which card covered the bill for the conference in Germany?", "4471"),
    ("We decided to pin numpy below 2.0 until the ONNX export is fixed.",
     "What version constraint do we keep on the array library, and why?", "below 2.0"),
    ("The customer's account number is ACC-99813.", "What is the client's account id?", "ACC-99813"),
    ("The backup job writes to the bucket s3://nightly-archive-eu.", "Where do the nightly backups get stored?",
     "nightly-archive-eu"),
    ("Maria's flight lands at Lisbon at 17:45 on Thursday.", "When does Maria arrive in Portugal?", "17:45"),
    ("The API rate limit for the partner tier is 1,200 requests per minute.",
     "How many calls per minute can partners make?", "1,200"),
    ("Remember: never deploy on Fridays after 3 pm.", "Is there a rule about shipping releases late in the week?",
     "Fridays after 3 pm"),
    ("The root cause of the outage was an expired TLS certificate on the load balancer.",
     "Why did the service go down?", "expired TLS certificate"),
    ("The office door code changed to 7316.", "What do I type to open the entrance of the office?", "7316"),
    ("Use the feature flag checkout_v2 to enable the new payment page.",
     "How do I turn on the redesigned payment screen?", "checkout_v2"),
    ("The quarterly budget for cloud spend is 48,000 euros.", "How much money can we spend on hosting this quarter?",
     "48,000"),
    ("The build agent's SSH key fingerprint ends in 9f:3a:c2.", "What does the CI machine's key fingerprint end with?",
     "9f:3a:c2"),
    ("Remember: the client prefers invoices as PDF sent to billing@northwind.example.",
     "Where and how should bills go to the customer?", "billing@northwind.example"),
    ("The migration script must run before 06:00 because the warehouse locks tables at six.",
     "What is the deadline for running the migration?", "06:00"),
    ("Dr. Okafor's clinic moved to 12 Harbour Street.", "What is the new address of Dr. Okafor's practice?",
     "12 Harbour Street"),
    ("The retry policy uses exponential backoff capped at 30 seconds.", "What is the longest wait between retries?",
     "30 seconds"),
)
FACTS_PER_THREAD = 10


def build(memory: Memory, thread: str, size: int, facts: list[tuple[str, str, str]], filler: list[str],
          offset: int) -> None:
    """The thread: ``size`` messages of filler with ``facts`` spread over it (written once; reused after)."""
    manager = manager_for(memory)
    if manager.exists(thread):
        if manager.state(thread).turns != size:
            raise SystemExit(f"{manager.folder / thread} holds another thread: remove --root and run again.")
        return
    at = {int((i + 0.5) * size / len(facts)): fact for i, fact in enumerate(facts)}
    for n in range(size):
        role = "user" if n % 2 == 0 else "assistant"
        text = at[n][0] if n in at else filler[(offset + n) % len(filler)]
        thread_append(memory, thread, role, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 1000, 5000])
    parser.add_argument("--budgets", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-threads-needle")
    args = parser.parse_args()

    from memdir.embeddings import load_embedder

    settings = Settings(root=args.root)
    embedder = load_embedder(model_dir=settings.embeddings.model_dir, cache_dir=settings.storage.cache_dir)
    memory = Memory.open(settings, embedder=embedder)
    filler = [text for dialogue in locomo_dialogues(args.data) for text in dialogue.turn_texts]
    found: dict[tuple[int, int], int] = {}
    asked: dict[tuple[int, int], int] = {}
    misses: list[str] = []
    started = time.perf_counter()
    try:
        for size in args.sizes:
            for part in range(len(FACTS) // FACTS_PER_THREAD):
                facts = list(FACTS[part * FACTS_PER_THREAD:(part + 1) * FACTS_PER_THREAD])
                thread = f"needle-{size}-{part}"
                build(memory, thread, size, facts, filler, offset=part * 2_917)
                thread_control(memory, thread, "strategy", "semantic")
                for budget in args.budgets:
                    for _, question, key in facts:
                        window = thread_context(memory, thread, budget, query=question)
                        hit = key in window
                        found[(size, budget)] = found.get((size, budget), 0) + hit
                        asked[(size, budget)] = asked.get((size, budget), 0) + 1
                        if not hit:
                            misses.append(f"N={size} budget={budget}: {question!r} (key {key!r})")
                print(f"{thread}: written and asked ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    finally:
        memory.close()

    print(f"\nNeedle in a thread: {len(FACTS)} facts, each stated once and asked in other words; default settings "
          f"(compaction on), semantic strategy, model {embedder.model_id}")
    print(f"{'messages':>8} {'budget':>7} {'found':>7} {'share':>7}")
    for size in args.sizes:
        for budget in args.budgets:
            share = found[(size, budget)] / asked[(size, budget)]
            print(f"{size:>8} {budget:>7} {found[(size, budget)]:>3}/{asked[(size, budget)]:<3} {share:7.2f}")
    total = sum(found.values()) / max(sum(asked.values()), 1)
    print(f"all: {total:.3f} (target >= 0.95)")
    for miss in misses:
        print(f"  missed {miss}")


if __name__ == "__main__":
    main()
