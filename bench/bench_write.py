"""Write latency and rebuild throughput, each against the model alone on the same texts.

Usage::

    python bench/bench_write.py [--runs 50] [--entries 1000]

The issue's target: write p50 <= the model's own inference time on the entry's searchable
text + 10 ms. Each run writes a different ~200-word entry (content drawn from LoCoMo when
``--data`` exists, else generated) into a root already holding ``--entries`` entries, with
the real model; the model alone is timed on the same searchable texts. Then `Memory.rebuild`
re-embeds the whole root (reading every entry, writing its .emb and .yml, updating the index)
against the embedder alone on the same searchable texts in one batched, length-sorted call
(target: rebuild within 1.25x of that). Prints medians.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memdir.core.settings import Settings  # noqa: E402
from memdir.embeddings.text import searchable_text  # noqa: E402
from memdir.memory import Memory  # noqa: E402


def words_source(data: Path) -> list[str]:
    if data.is_file():
        conversations = json.loads(data.read_text())
        return [word for conv in conversations for key, turns in conv["conversation"].items()
                if key.startswith("session_") and isinstance(turns, list) for turn in turns
                for word in turn["text"].split()]
    return [f"word{i % 997}" for i in range(50_000)]


def entry(words: list[str], rng: random.Random, i: int) -> tuple[str, str, dict]:
    start = rng.randrange(0, len(words) - 200)
    content = " ".join(words[start:start + 200])
    meta = {"type": "fact", "tags": ["bench", f"t{i % 13}"], "domain": "bench/write"}
    return f"fact/bench/w{i}", content, meta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "locomo10.json")
    args = parser.parse_args()
    rng = random.Random(7)
    words = words_source(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(root=Path(tmp) / "root", cache_dir=Path(tmp) / "cache")
        with Memory.open(settings) as memory:
            embedder = memory.model.get()
            if embedder is None:
                sys.exit(f"no model: {memory.model.reason}")
            for i in range(args.entries):  # a realistic root, not an empty one
                path, content, meta = entry(words, rng, 100_000 + i)
                memory.write(path, content[:300], title=f"Filler {i}", metadata=meta)
            writes, model_only, model_inside = [], [], []
            embed = embedder.embed

            def timed_embed(texts):  # the model's own time inside each write, on exactly its text
                started = time.perf_counter()
                result = embed(texts)
                model_inside.append((time.perf_counter() - started) * 1000)
                return result

            for i in range(args.runs):
                path, content, meta = entry(words, rng, i)
                title = f"Entry {i}"
                text = searchable_text(title, meta, content, settings.embeddings.max_chars)
                started = time.perf_counter()
                embed([text])
                model_only.append((time.perf_counter() - started) * 1000)
                embedder.embed = timed_embed
                started = time.perf_counter()
                memory.write(path, content, title=title, metadata=meta)
                writes.append((time.perf_counter() - started) * 1000)
                embedder.embed = embed
            texts = [searchable_text(e.title, e.metadata, e.content, settings.embeddings.max_chars)
                     for e in (memory.read(info.path) for info in memory.list(include_virtual=False))]
            started = time.perf_counter()
            embedder.embed(texts)
            raw_s = time.perf_counter() - started
            started = time.perf_counter()
            rebuilt = memory.rebuild()
            rebuild_s = time.perf_counter() - started
    model_ms, write_ms = statistics.median(model_only), statistics.median(writes)
    overhead = statistics.median([total - model for total, model in zip(writes, model_inside)])
    print(f"write of a ~200-word entry into a {args.entries}-entry root, {args.runs} runs")
    print(f"  model alone on its searchable text (separate call): median {model_ms:6.1f} ms")
    print(f"  model inside the write (same text):                 median {statistics.median(model_inside):6.1f} ms")
    print(f"  Memory.write (embed + 3 files + index):             median {write_ms:6.1f} ms")
    print(f"  write minus its own model time: median {overhead:+.1f} ms (target <= +10 ms); "
          f"write minus the separate model median: {write_ms - model_ms:+.1f} ms")
    print(f"rebuild of {rebuilt} entries: {rebuilt / rebuild_s:6.1f} entries/s; "
          f"embedder alone on the same texts: {len(texts) / raw_s:6.1f} texts/s; "
          f"ratio {rebuild_s / raw_s:.2f}x (target <= 1.25x)")


if __name__ == "__main__":
    main()
