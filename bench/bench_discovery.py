"""Per-message discovery: how often the reminder holds the answer, and how often it speaks out of turn.

    python bench/bench_discovery.py [--questions 40] [--set name=value ...]

Each LoCoMo question (categories 1-4 with evidence, the first ``--questions`` of each
conversation) is the user's message, and `memdir.tools.discovery.discover` (what the
``memdir discover`` hook and MemoryDiscover run) answers it against three stores:

* its own conversation's store: the share of messages whose reminder names an evidence
  turn (target >= 0.60);
* the next conversation's store (other people, similar chit-chat): the share of messages
  that get any reminder at all (target <= 0.10);
* a store of another domain, the Python documentation corpus of `corpora.docs_corpus`:
  the same share (target <= 0.02).

Stores are written with `Memory.write` as in the recall benches (`corpora`).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench_recall_locomo import parse_overrides
from corpora import DEFAULT_LOCOMO, docs_corpus, locomo_corpora, real_embedder, write_store
from memdir.core.settings import Settings
from memdir.tools.discovery import discover


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--recipe", choices=["conversation", "plain"], default="conversation")
    parser.add_argument("--questions", type=int, default=40, help="questions per conversation")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-cache")
    args = parser.parse_args(argv)

    settings = Settings(**parse_overrides(args.overrides))
    conversations = locomo_corpora(args.data, args.recipe)
    docs = docs_corpus()
    locomo_embedder = real_embedder(args.cache, "locomo")
    docs_embedder = real_embedder(args.cache, "docs")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memdir-discovery-") as tmp:
        stores = [write_store(Path(tmp) / c.name, c.docs, settings, locomo_embedder) for c in conversations]
        other_domain = write_store(Path(tmp) / "docs", docs.docs, settings, docs_embedder)
        built = time.perf_counter() - started
        with_evidence = own_shown = other_shown = domain_shown = messages = 0
        for number, corpus in enumerate(conversations):
            other = stores[(number + 1) % len(stores)]
            for query in corpus.queries[: args.questions]:
                messages += 1
                reminder = discover(stores[number], query.text, settings)
                own_shown += bool(reminder)
                with_evidence += any(f"`{path}`" in reminder for path in query.wanted)
                other_shown += bool(discover(other, query.text, settings))
                domain_shown += bool(discover(other_domain, query.text, settings))
        for memory in [*stores, other_domain]:
            memory.close()
    print(f"discovery on {messages} LoCoMo questions ({args.questions} per conversation, categories 1-4), "
          f"'{args.recipe}' entries; setup {built:.0f} s")
    print(f"thresholds {settings.discovery_threshold} / short {settings.discovery_threshold_short} "
          f"(< {settings.adaptive_word_cutoff} words), floor {settings.discovery_min_score}")
    print(f"  own conversation's store: evidence in the reminder  {with_evidence / messages:6.1%}"
          f"   (any reminder {own_shown / messages:.1%})")
    print(f"  another conversation's store: any reminder          {other_shown / messages:6.1%}")
    print(f"  another domain's store ({docs.name}, {len(docs.docs)} entries): any reminder"
          f"  {domain_shown / messages:6.1%}")


if __name__ == "__main__":
    main()
