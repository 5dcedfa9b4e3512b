"""How much of the model's word table a process holds after embedding real text.

Usage::

    python bench/bench_word_table.py [--texts N] [--cache DIR]

Embeds LoCoMo's dialogue turns (``"speaker: text"``) and questions in their order, 32 at a time,
with the real model as memdir loads it, and prints at a few points the table's rows read so far
and the memory the process holds for them (the resident size of the table's mapping, from
``/proc/self/smaps``) beside the whole table's size, which a process held before the table was
read row by row. LoCoMo was not used to shape the table's code.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from corpora import DEFAULT_LOCOMO  # noqa: E402

from memdir.embeddings import OnnxEmbedder, resolve_model  # noqa: E402
from tests.mappings import resident_bytes  # noqa: E402


def locomo_texts(path: Path) -> list[str]:
    """Every dialogue turn as said, then every question, conversation by conversation."""
    texts = []
    for sample in json.loads(path.read_text()):
        talk = sample["conversation"]
        for key in sorted((k for k, v in talk.items() if k.startswith("session_") and isinstance(v, list)),
                          key=lambda k: int(k.split("_")[1])):
            texts += [f"{turn['speaker']}: {turn['text']}" for turn in talk[key]]
        texts += [qa["question"] for qa in sample["qa"]]
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=0, help="embed only the first N texts (0: all)")
    parser.add_argument("--locomo", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-floor" / "model")
    args = parser.parse_args()
    texts = locomo_texts(args.locomo)[: args.texts or None]
    embedder = OnnxEmbedder(resolve_model(cache_dir=args.cache), args.cache)
    embedder.warmup()
    table = embedder.word_table
    if table is None:
        raise SystemExit("this graph holds its own word table")
    whole = table.matrix.nbytes / 2**20
    print(f"{len(texts)} LoCoMo texts; the whole table: {table.matrix.shape[0]} rows, {whole:.1f} MB", flush=True)
    marks = {100, 1000, 3000, len(texts)}
    started = time.perf_counter()
    for done in range(32, len(texts) + 32, 32):
        embedder.embed(texts[done - 32 : done])
        if any(done - 32 < mark <= done for mark in marks):
            held = resident_bytes(table.matrix.ctypes.data) / 2**20
            print(f"after {min(done, len(texts)):6d} texts: {table.rows_held:6d} rows read, {held:5.1f} MB held "
                  f"({held / whole:.0%} of the whole table)", flush=True)
    print(f"({time.perf_counter() - started:.0f} s, load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
