"""all-MiniLM-L6-v2 (or any BERT sentence encoder) on onnxruntime, no torch.

The model is loaded lazily: constructing an ``OnnxEmbedder`` touches no file,
so the MCP server starts instantly and a background thread can call
``warmup()``. The first load builds an ONNX graph from ``model.safetensors``
(about 2 s) and caches it under ``cache_dir``; later processes load the cached
file directly. The cache file name carries a checksum of the weights and the
graph version, so new weights or a changed builder never reuse a stale graph.

The cached graph keeps its weight matrices in a file beside it (ONNX external data),
which onnxruntime maps into memory rather than reading into its own: it repacks them
for its kernels from the mapped file, so loading the model no longer holds a second
copy of them in memory (`onnx_graph.weights_apart`). Its word-embedding table is a file of
its own too, given to the graph as an input and read row by row as texts use its words
(`memdir.embeddings.word_table`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from memdir.core.files import replace_file
from memdir.embeddings.graph_format import GRAPH_VERSION, INPUT_WORD_TABLE, OUTPUT_EMBEDDING
from memdir.embeddings.resolved import ResolvedModel
from memdir.embeddings.word_table import WordTable

if TYPE_CHECKING:
    from onnxruntime import InferenceSession
    from tokenizers import Tokenizer

__all__ = ["OnnxEmbedder"]

log = logging.getLogger(__name__)

_FEEDS = ("input_ids", "attention_mask", "token_type_ids")


class OnnxEmbedder:
    """An ``Embedder`` running a sentence encoder through onnxruntime.

    ``embed`` is thread-safe: loading happens once under a lock, and
    onnxruntime sessions and HF tokenizers allow concurrent calls.

    Attributes:
        model_id: stable model name (see ``Embedder``).
        dimensions: embedding length.
        source: where the weights came from, for humans.
        onnx_file: the ``.onnx`` file in use once loaded (None before, or when the
            cache dir was unwritable and the graph lives only in memory).
        build_seconds: time spent building the graph on first use (0.0 if cached).
        load_seconds: total time of the lazy load (build + session + tokenizer).
        word_table: the rows of the word-embedding table met so far, once loaded, when the graph
            takes the table as an input (None for a graph holding its own).
    """

    def __init__(
        self,
        model: ResolvedModel,
        cache_dir: Path,
        batch_size: int = 32,
        threads: int | None = None,
        *,
        fused: bool = True,
        spinning: bool = False,
    ) -> None:
        """Remember what to load; does no I/O (see module docstring).

        Args:
            model: the resolved model directory.
            cache_dir: where built ``.onnx`` files are kept (created on demand).
            batch_size: texts per onnxruntime call; 32 keeps padding waste low after sorting.
            threads: onnxruntime intra-op threads; None means ``os.cpu_count()``.
            fused: build the graph with onnxruntime's fused BERT kernels (faster).
            spinning: let onnxruntime's worker threads busy-wait between ops. Off by
                default: it gains ~10% on an idle machine but halves speed (and burns
                CPU) when other processes compete for the cores, which is the usual
                case for a server living beside an agent.
        """
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.model_id = model.model_id
        self.dimensions = model.dimensions
        self.source = model.source
        self.model = model
        self.cache_dir = Path(cache_dir)
        self.batch_size = batch_size
        self.threads = threads or os.cpu_count() or 1
        self.fused = fused
        self.spinning = spinning
        self.onnx_file: Path | None = None
        self.build_seconds = 0.0
        self.load_seconds: float | None = None
        self._lock = threading.Lock()
        self._session: InferenceSession | None = None
        self._tokenizer: Tokenizer | None = None
        self._inputs: tuple[str, ...] = ()
        self._output: str = ""
        self._pooled_in_graph = False
        self.word_table: WordTable | None = None

    # ------------------------------------------------------------------ public

    @property
    def loaded(self) -> bool:
        """True once the session and tokenizer exist."""
        return self._session is not None

    def warmup(self) -> None:
        """Load everything now (e.g. from a background thread) so the first query is fast."""
        self._ensure_loaded()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts; rows follow the input order, are float32 and unit length.

        Texts are tokenized in one call, then run longest-first in batches of
        similar length so each batch pads little; results are written back to
        their original rows.
        """
        texts = list(texts)
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        self._ensure_loaded()
        assert self._tokenizer is not None  # (set before the session, which says it is loaded)
        encodings = self._tokenizer.encode_batch(texts)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(texts))
        order = np.argsort(-lengths, kind="stable")
        for start in range(0, len(texts), self.batch_size):
            rows = order[start : start + self.batch_size]
            ids = np.zeros((len(rows), int(lengths[rows[0]])), dtype=np.int64)
            mask = np.zeros_like(ids)
            for r, i in enumerate(rows):
                n = lengths[i]
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1
            out[rows] = self._run(ids, mask)
        return out

    def embed_one(self, text: str) -> np.ndarray:
        """Embed one text (e.g. a query) as a 1-D vector."""
        return self.embed([text])[0]

    # ------------------------------------------------------------------ inference

    def _run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        available = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        if self.word_table is not None:
            available["input_ids"] = self.word_table.renumber(ids)
            available[INPUT_WORD_TABLE] = self.word_table.matrix
        assert self._session is not None  # (`embed` loaded it)
        result = self._session.run([self._output], {name: available[name] for name in self._inputs})[0]
        if self._pooled_in_graph:
            return result
        return _mean_pool_normalise(result, mask) if result.ndim == 3 else _normalise(result)

    # ------------------------------------------------------------------ loading

    def _ensure_loaded(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            started = time.perf_counter()
            tokenizer = self._load_tokenizer()
            session = self._load_session()
            inputs = tuple(i.name for i in session.get_inputs())
            fed = (*_FEEDS, INPUT_WORD_TABLE) if self.word_table is not None else _FEEDS
            unknown = [name for name in inputs if name not in fed]
            if unknown:
                raise ValueError(f"{self.model.weights_path}: unsupported model inputs {unknown}")
            outputs = [o.name for o in session.get_outputs()]
            self._pooled_in_graph = OUTPUT_EMBEDDING in outputs
            self._output = OUTPUT_EMBEDDING if self._pooled_in_graph else outputs[0]
            self._inputs = inputs
            self._tokenizer = tokenizer
            self.load_seconds = time.perf_counter() - started
            self._session = session  # published last: it is the "loaded" flag
            log.info("embedding model %s loaded from %s in %.2fs", self.model_id, self.source, self.load_seconds)

    def _load_tokenizer(self) -> Tokenizer:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self.model.tokenizer_path))
        # tokenizer.json ships fixed 128-token padding/truncation; sentence-transformers
        # overrides both, so must we.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self.model.max_seq_length)
        return tokenizer

    def _load_session(self) -> InferenceSession:
        if self.model.onnx_path is not None:
            self.onnx_file = self.model.onnx_path
            return self._new_session(str(self.model.onnx_path))
        path = self.cached_onnx_path()
        if path.is_file():
            try:
                session = self._new_session(str(path))
                self.word_table = _word_table(session, _words_path(path))
                self.onnx_file = path
                return session
            except Exception:  # noqa: BLE001 - a damaged cache file is rebuilt, never fatal
                log.warning("cached ONNX file %s is unreadable; rebuilding", path, exc_info=True)
        from memdir.embeddings import onnx_graph  # imports onnx: only to build a graph not cached yet

        started = time.perf_counter()
        graph = onnx_graph.build_from_directory(self.model.directory, fused=self.fused)
        words = onnx_graph.words_apart(graph)
        weights_path, words_path = _weights_path(path), _words_path(path)
        weights = onnx_graph.weights_apart(graph, weights_path.name)
        self.build_seconds = time.perf_counter() - started
        if (_atomic_write(words_path, words.astype("<f4").tobytes()) and _atomic_write(weights_path, weights)
                and _atomic_write(path, graph.SerializeToString())):
            _drop_older_graphs(path)
            session = self._new_session(str(path))
            self.word_table = _word_table(session, words_path)
            self.onnx_file = path
            return session
        onnx_graph.weights_back(graph, weights)
        onnx_graph.words_back(graph, words)
        return self._new_session(graph.SerializeToString())

    def _new_session(self, model: str | bytes) -> InferenceSession:
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if self.spinning else "0")
        options.log_severity_level = 3  # shape-merge warnings on fused ops are noise
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])

    def cached_onnx_path(self) -> Path:
        """Where the built graph for these weights and this builder version is cached (the weights'
        digest is remembered there, see `_weights_digest`)."""
        digest = _weights_digest(self.model.directory / "model.safetensors", self.cache_dir / "onnx")[:16]
        flavour = "fused" if self.fused else "plain"
        name = f"{_slug(self.model_id)}-{digest}-g{GRAPH_VERSION}-{flavour}.onnx"
        return self.cache_dir / "onnx" / name


def _mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' masked mean + L2, for ready ``model.onnx`` files without pooling."""
    m = mask[:, :, None].astype(np.float32)
    pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
    return _normalise(pooled)


def _normalise(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float32, copy=False)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _weights_digest(path: Path, folder: Path) -> str:
    """The sha256 of the weights file ``path``, remembered in ``folder`` by the file's identity
    (device, inode, size, modification time): hashing ~90 MB took ~0.2 s of every start, for
    the name of a graph cached long ago. A file replaced or rewritten is hashed again."""
    st = path.stat()
    identity = f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"
    remembered = folder / f"weights-{hashlib.sha256(os.fsencode(path)).hexdigest()[:16]}.sha256"
    try:
        known, digest = remembered.read_text(encoding="utf-8").split()
        if known == identity and len(digest) == 64:
            return digest
    except (OSError, ValueError):
        pass
    digest = _sha256(path)
    try:
        remembered.parent.mkdir(parents=True, exist_ok=True)
        replace_file(remembered, f"{identity} {digest}\n".encode(), durable=False)  # derived: lost, it is hashed again
    except OSError:
        pass  # an unwritable cache: hashed at every start, as before
    return digest


def _weights_path(graph: Path) -> Path:
    """The file beside a cached graph that holds its weights (`onnx_graph.weights_apart`), written
    before the graph: a graph file found in the cache has its weights (or fails to load and is rebuilt)."""
    return graph.with_suffix(".weights")


def _words_path(graph: Path) -> Path:
    """The file beside a cached graph that holds its word table (`onnx_graph.words_apart`), written
    before the graph, like its weights."""
    return graph.with_suffix(".words")


def _drop_older_graphs(graph: Path) -> None:
    """Delete the files of graphs this builder's earlier versions cached for the same weights
    (``...-g<N>-...`` with N below `GRAPH_VERSION`): no version of memdir reads a graph older
    than its own, and each set is ~90 MB. Newer versions' files are left to the memdir that
    built them, so two installed versions never delete each other's cache."""
    prefix, _, rest = graph.name.partition(f"-g{GRAPH_VERSION}-")
    flavour = rest.split(".", 1)[0]
    for found in graph.parent.glob(f"{prefix}-g*-{flavour}.*"):
        version = found.name[len(prefix) + 2:].split("-", 1)[0]
        if version.isdigit() and int(version) < GRAPH_VERSION:
            try:
                found.unlink()
            except OSError:
                log.debug("cannot delete the older cached graph file %s", found, exc_info=True)


def _word_table(session: InferenceSession, path: Path) -> WordTable | None:
    """The word table ``session``'s graph takes as an input, read from ``path``; None when the
    graph holds its own."""
    for given in session.get_inputs():
        if given.name == INPUT_WORD_TABLE:
            rows, width = given.shape
            return WordTable(path, rows, width)
    return None


def _slug(model_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in model_id.rsplit("/", 1)[-1])


def _atomic_write(path: Path, data: bytes) -> bool:
    """Write via a temp file + rename so concurrent processes never read half a model.

    Returns False (and logs) when the cache dir is unwritable: memdir then keeps
    the graph in memory and rebuilds it next start, which is slower but works.
    """
    try:
        replace_file(path, data, durable=False)  # a lost cache file is rebuilt at the next start
        return True
    except OSError:
        log.warning("cannot cache the ONNX model at %s", path, exc_info=True)
        return False
