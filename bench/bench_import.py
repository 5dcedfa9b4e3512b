"""`memdir import --from` on 10K records: how long a user waits, and that a second run changes nothing.

Usage::

    python bench/bench_import.py [--records 10000] [--formats mcp-memory,mcp-memory-service]
                                 [--data /work/shared/data/locomo10.json]

For each format a source of ``--records`` records is written in that tool's format (entities
with three observations each and one relation per entity for the reference server's
``memory.jsonl``; memories with tags and a type for mcp-memory-service's JSON export), their
text drawn from LoCoMo's dialogue turns. Then the real command runs, as a user runs it, in a
fresh process with default settings (the real model embeds the new entries after the import):
``memdir import --from FORMAT SOURCE``, timed end to end; then the same import again (nothing
to change), timed. Printed per format: records, both wall times, records per second of the
first run, and the second run's summary line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

from bench_write import words_source  # noqa: E402  (the same LoCoMo words as the write bench)


def sentence(words: list[str], rng: random.Random, length: int) -> str:
    start = rng.randrange(0, len(words) - length)
    return " ".join(words[start:start + length])


def reference_source(path: Path, records: int, words: list[str], rng: random.Random) -> None:
    with path.open("w") as out:
        for i in range(records):
            out.write(json.dumps({"type": "entity", "name": f"Entity {i}", "entityType": f"kind{i % 17}",
                                  "observations": [sentence(words, rng, 20) for _ in range(3)]}) + "\n")
        for i in range(records):
            out.write(json.dumps({"type": "relation", "from": f"Entity {i}", "to": f"Entity {(i * 7 + 1) % records}",
                                  "relationType": "relates_to"}) + "\n")


def memory_service_source(path: Path, records: int, words: list[str], rng: random.Random) -> None:
    memories = [{"content": sentence(words, rng, 40), "content_hash": f"{i:064x}", "tags": ["bench", f"t{i % 13}"],
                 "created_at": 1_700_000_000 + i, "updated_at": 1_700_000_000 + i, "memory_type": "note",
                 "metadata": {"n": i}} for i in range(records)]
    path.write_text(json.dumps({"export_metadata": {"total_memories": records}, "memories": memories}))


SOURCES = {"mcp-memory": ("memory.jsonl", reference_source), "mcp-memory-service": ("export.json", memory_service_source)}


def run(fmt: str, source: Path, root: Path, env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "memdir", "import", "--from", fmt, str(source), "--root", str(root)],
                          env=env, capture_output=True, text=True, check=True)
    elapsed = time.perf_counter() - start
    summary = next(line for line in done.stdout.splitlines() if line.startswith(f"{fmt}:"))
    return elapsed, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--formats", default=",".join(SOURCES))
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/locomo10.json"))
    args = parser.parse_args()
    words = words_source(args.data)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for fmt in args.formats.split(","):
        name, write = SOURCES[fmt]
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / name
            write(source, args.records, words, random.Random(7))
            env["MEMDIR_CONFIG"] = str(Path(tmp) / "memdir.toml")
            print(f"{fmt}: {args.records} records, load {os.getloadavg()[0]:.2f}", flush=True)
            first, summary = run(fmt, source, Path(tmp) / "root", env)
            print(f"  first import  {first:7.1f} s ({args.records / first:.0f} records/s): {summary}", flush=True)
            second, summary = run(fmt, source, Path(tmp) / "root", env)
            print(f"  second import {second:7.1f} s: {summary}  (load {os.getloadavg()[0]:.2f})", flush=True)


if __name__ == "__main__":
    main()
