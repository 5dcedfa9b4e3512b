"""MemoryGlob ``**/*`` (and a narrow glob, and `Memory.list`) at 100K entries.

    python bench/bench_glob.py [--entries 100000] [--runs 5] [--cache DIR]

Writes N entries straight in the on-disk format (``.md`` + ``.yml``, 4 types in 200
folders; no ``.emb``: listings never read vectors) under ``--cache`` once, opens the root
once to build its derived index (keyword only), then prints median and p95 of, each in the
same open `Memory`:

* the first ``MemoryGlob("**/*")`` after opening: a walk of every file, which stamps the
  folders (`memdir.storage.folder_stamps`) so that later listings come from the index;
* ``MemoryGlob("**/*")`` — the tool's whole answer (500 newest listed); target <= 300 ms at 100K;
* ``MemoryGlob("concept/folder-7/*")`` — a narrow glob;
* ``Memory.list()`` — every entry in path order;

and the same ``**/*`` listing built the old way, parsing every ``.yml`` (for scale).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memdir.core.settings import Settings  # noqa: E402
from memdir.memory import Memory  # noqa: E402
from memdir.storage.sidecar import dump_sidecar  # noqa: E402
from memdir.tools.memory_glob import memory_glob  # noqa: E402
from memdir.tools.session import Session  # noqa: E402

TYPES = ("concept", "fact", "skill", "experience")
WORDS = "alpha beta gamma delta index cache query branch deploy schema token cluster".split()


def write_root(root: Path, entries: int) -> None:
    """``entries`` entries in SwarmMemory's on-disk format, written directly (no index, no model)."""
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    for i in range(entries):
        kind = TYPES[i % 4]
        path = f"{kind}/folder-{i % 200}/entry-{i}.md"
        content = f"# Entry {i}\n\n" + " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(60)) + "\n"
        md = root / path
        md.parent.mkdir(parents=True, exist_ok=True)
        md.write_text(content, encoding="utf-8")
        sidecar = {
            "title": f"Entry {i} about {WORDS[i % len(WORDS)]}", "file_path": path,
            "updated_at": start + timedelta(minutes=i * 37 % 500_000), "size": len(content.encode()), "hits": i % 5,
            "metadata": {"type": kind, "tags": [WORDS[i % len(WORDS)]]},
        }
        md.with_suffix(".yml").write_bytes(dump_sidecar(sidecar))


def timed(fn, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return times


def report(label: str, times: list[float]) -> None:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    print(f"{label:<44} median {statistics.median(times) * 1000:8.1f} ms   p95 {p95 * 1000:8.1f} ms   (n={len(times)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/memdir-bench-glob"))
    args = parser.parse_args()

    root = args.cache / f"root-{args.entries}"
    if not (root / ".written").exists():
        started = time.perf_counter()
        write_root(root, args.entries)
        (root / ".written").write_text("ok")
        print(f"wrote {args.entries} entries in {time.perf_counter() - started:.0f}s")
    settings = Settings(root=root, embeddings_enabled=False)
    started = time.perf_counter()
    with Memory.open(settings, load_model=False) as memory:
        print(f"open (index built or checked): {time.perf_counter() - started:.1f}s, {args.entries} entries\n")
        session = Session()
        report("first MemoryGlob('**/*') (walks, stamps)", timed(lambda: memory_glob(memory, session, "**/*"), 1))
        report("MemoryGlob('**/*')", timed(lambda: memory_glob(memory, session, "**/*"), args.runs))
        report("MemoryGlob('concept/folder-7/*')", timed(lambda: memory_glob(memory, session, "concept/folder-7/*"), args.runs))
        report("Memory.list()", timed(memory.list, args.runs))
        report("every .yml parsed (the old way)", timed(lambda: list(memory.adapter.iter_entries()), 1))
        print(f"\n{memory_glob(memory, session, '**/*').splitlines()[0]}")


if __name__ == "__main__":
    main()
