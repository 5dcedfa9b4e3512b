"""Recall on documentation-like entries: a check that LoCoMo's tuning does not hurt another kind of store.

    python bench/bench_recall_docs.py [--set name=value ...] [--compare name=value ...]

The corpus (`corpora.docs_corpus`): one entry per documented function or class of ~55
standard-library modules, holding its docstring without the first sentence; the query
is that first sentence, the one right answer its entry. Written with `Memory.write`,
searched with the product's `HybridSearcher`; prints recall@1/5/10 and MRR@10 for the
current defaults and for each ``--compare`` variant (e.g. the earlier defaults).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_recall_locomo import parse_overrides
from corpora import docs_corpus, real_embedder, recall_at, write_store

from memdir.core.settings import Settings
from memdir.search.hybrid import HybridSearcher

KS = (1, 5, 10)

EARLIER_DEFAULTS = {
    "semantic_weight": 0.5, "bm25_weight": 0.3, "keyword_weight": 0.2, "tag_weight": 0.1,
    "keyword_idf": False, "embedding_summary": "first_paragraph", "context_weight": 0.0,
}
"""The ranking settings before issue 11 (what ``--compare earlier`` measures)."""


def scores(memory, corpus, settings: Settings, embedder) -> dict[str, float]:
    searcher = HybridSearcher(memory.index, settings, embedder=embedder)
    recalls = {k: [] for k in KS}
    reciprocal = []
    for query in corpus.queries:
        ranked = [hit.path for hit in searcher.search(query.text, top_k=max(KS))]
        for k in KS:
            recalls[k].append(recall_at(ranked, query.wanted, k))
        rank = next((i for i, path in enumerate(ranked, start=1) if path in query.wanted), None)
        reciprocal.append(1.0 / rank if rank else 0.0)
    return {**{f"R@{k}": float(np.mean(v)) for k, v in recalls.items()}, "MRR@10": float(np.mean(reciprocal))}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--compare", action="append", default=[], metavar="NAME=VALUE[,NAME=VALUE]|earlier",
                        help="a variant to measure beside the defaults; 'earlier' = the settings before issue 11")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-cache")
    args = parser.parse_args(argv)

    overrides = parse_overrides(args.overrides)
    variants = {"memdir defaults": Settings(**overrides)}
    for spec in args.compare or ["earlier"]:
        changes = EARLIER_DEFAULTS if spec == "earlier" else parse_overrides(spec.split(","))
        variants[spec] = Settings(**{**overrides, **changes})
    corpus = docs_corpus()
    embedder = real_embedder(args.cache, "docs")
    print(f"{corpus.name}: {len(corpus.docs)} entries, {len(corpus.queries)} queries; model {embedder.model_id}")
    header = f"{'settings':44s}" + "".join(f"  {name:>6s}" for name in (*[f'R@{k}' for k in KS], "MRR@10"))
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory(prefix="memdir-docs-") as tmp:
        for number, (name, settings) in enumerate(variants.items()):
            started = time.perf_counter()
            # The searchable text depends on the settings: each variant writes its own store.
            with write_store(Path(tmp) / str(number), corpus.docs, settings, embedder) as memory:
                found = scores(memory, corpus, settings, embedder)
            cells = "".join(f"  {value:6.3f}" for value in found.values())
            print(f"{name:44.44s}{cells}   ({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
