"""Benchmark memdir's embedder: latency, throughput, and overhead over raw onnxruntime.

Usage::

    python bench/bench_embed.py [--n 2000] [--threads 2] [--data ../shared/data/locomo10.json]

Prints medians of:

(a) one 256-token text: raw ``session.run`` and the full ``embed()`` (tokenize + run);
(b) one ~200-word entry's searchable text (Title/Tags/Domain/first paragraph,
    cut at 1200 chars as memdir's indexer does);
(c) batched throughput on N varied LoCoMo dialogue texts: memdir ``embed()`` vs
    raw onnxruntime on the same pre-tokenized, length-sorted, padded batches
    (same graph, same threads), and their ratio (target <= 1.25);
(d) pooling inside the graph vs in numpy, on the same batches;

plus the first-time ONNX build + load and the warm (cached) load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memdir.embeddings import resolve_model  # noqa: E402
from memdir.embeddings.minilm import OnnxEmbedder, _mean_pool_normalise  # noqa: E402


def locomo_texts(path: Path) -> list[str]:
    """All dialogue turns, in file order: short chat lines of realistic variety."""
    data = json.loads(path.read_text(encoding="utf-8"))
    texts = []
    for sample in data:
        conv = sample["conversation"]
        for key in sorted(k for k in conv if k.startswith("session_") and isinstance(conv[k], list)):
            texts.extend(turn["text"] for turn in conv[key] if turn.get("text"))
    return texts


def varied_texts(turns: list[str], n: int) -> list[str]:
    """n texts of mixed length: single turns, plus every 4th joined with its neighbours."""
    out, i = [], 0
    while len(out) < n:
        k = 1 if len(out) % 4 else 1 + len(out) % 7  # every 4th text spans 1..7 turns
        out.append(" ".join(turns[(i + j) % len(turns)] for j in range(k)))
        i += k
    return out


def entry_text(turns: list[str]) -> str:
    """A memdir-style searchable text of a ~200-word entry (Title/Tags/Domain/first paragraph)."""
    words: list[str] = []
    i = 0
    while len(words) < 200:
        words.extend(turns[i].split())
        i += 1
    paragraph = " ".join(words[:200])
    text = f"Title: Caroline and Melanie catch up\nTags: family, painting, support-group\nDomain: personal\n{paragraph}"
    return text[:1200]


def timed_ms(fn, reps: int, warmup: int = 2) -> str:
    """'median ms (best ms)': the best run shows the uncontended speed on a shared machine."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return f"{statistics.median(times) * 1000:.1f} ms (best {min(times) * 1000:.1f})"


def padded_batches(embedder: OnnxEmbedder, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Tokenize, sort by length and pad exactly as a minimal raw pipeline would."""
    enc = embedder._tokenizer.encode_batch(texts)
    enc.sort(key=lambda e: -len(e.ids))
    batches = []
    for s in range(0, len(enc), embedder.batch_size):
        chunk = enc[s : s + embedder.batch_size]
        width = len(chunk[0].ids)
        ids = np.zeros((len(chunk), width), np.int64)
        mask = np.zeros_like(ids)
        for r, e in enumerate(chunk):
            ids[r, : len(e.ids)] = e.ids
            mask[r, : len(e.ids)] = 1
        batches.append((ids, mask))
    return batches


def main() -> None:
    parser = argparse.ArgumentParser(description="memdir embedding benchmark")
    parser.add_argument("--n", type=int, default=2000, help="texts for the throughput test")
    parser.add_argument("--reps", type=int, default=30, help="repetitions for latency medians")
    parser.add_argument("--rounds", type=int, default=3, help="repetitions of the throughput test")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--model-dir", type=Path, default=None)
    parser.add_argument("--spinning", action="store_true", help="let onnxruntime threads busy-wait")
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "locomo10.json")
    args = parser.parse_args()

    model = resolve_model(args.model_dir)
    with tempfile.TemporaryDirectory(prefix="memdir-bench-") as cache:
        cold = OnnxEmbedder(model, Path(cache), args.batch_size, args.threads, spinning=args.spinning)
        cold.warmup()
        emb = OnnxEmbedder(model, Path(cache), args.batch_size, args.threads, spinning=args.spinning)
        emb.warmup()
    print(f"model: {emb.model_id} from {emb.source}")
    print(f"threads={emb.threads} batch={emb.batch_size} spinning={emb.spinning}")
    print(f"first load (build + cache + session): {cold.load_seconds:.2f} s (graph build {cold.build_seconds:.2f} s)")
    print(f"warm load (cached .onnx):             {emb.load_seconds:.2f} s")

    session = emb._session
    run = lambda ids, mask, out="sentence_embedding": session.run(  # noqa: E731
        [out], {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    )[0]

    turns = locomo_texts(args.data)
    long_text, k = "", 0
    while len(long_text.split()) < 240:  # ~300 word pieces: just over the 256 limit, so truncated
        long_text, k = f"{long_text} {turns[k]}".strip(), k + 1
    ids = np.array([emb._tokenizer.encode(long_text).ids], np.int64)
    assert ids.shape[1] == emb.model.max_seq_length, ids.shape
    ones = np.ones_like(ids)
    print(f"(a) one {ids.shape[1]}-token text: raw session.run {timed_ms(lambda: run(ids, ones), args.reps)}, "
          f"embed() {timed_ms(lambda: emb.embed([long_text]), args.reps)}")

    entry = entry_text(turns)
    n_tok = len(emb._tokenizer.encode(entry).ids)
    print(f"(b) ~200-word entry ({len(entry)} chars, {n_tok} tokens): embed() {timed_ms(lambda: emb.embed([entry]), args.reps)}")

    texts = varied_texts(turns, args.n)
    batches = padded_batches(emb, texts)
    raw_t, mem_t = [], []
    for _ in range(args.rounds):
        t = time.perf_counter()
        for b_ids, b_mask in batches:
            run(b_ids, b_mask)
        raw_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        emb.embed(texts)
        mem_t.append(time.perf_counter() - t)
    raw_s, mem_s = statistics.median(raw_t), statistics.median(mem_t)
    mean_tokens = np.mean([int(row.sum()) for _, mask in batches for row in mask])
    print(f"(c) {len(texts)} texts (mean {mean_tokens:.0f} tokens), median of {args.rounds} rounds: "
          f"memdir {len(texts) / mem_s:.0f} texts/s (best {len(texts) / min(mem_t):.0f}), "
          f"raw onnxruntime {len(texts) / raw_s:.0f} texts/s (best {len(texts) / min(raw_t):.0f}); "
          f"memdir/raw time {mem_s / raw_s:.3f} (per-round ratios {', '.join(f'{m / r:.2f}' for m, r in zip(mem_t, raw_t))})")

    sample = batches[len(batches) // 2 : len(batches) // 2 + 8]
    reps = max(3, args.reps // 5)
    in_graph = timed_ms(lambda: [run(i, m) for i, m in sample], reps)
    in_numpy = timed_ms(lambda: [_mean_pool_normalise(run(i, m, "last_hidden_state"), m) for i, m in sample], reps)
    print(f"(d) pooling, {len(sample)} batches: in graph {in_graph}, in numpy {in_numpy}")


if __name__ == "__main__":
    main()
