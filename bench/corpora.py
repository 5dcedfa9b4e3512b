"""Corpora the recall and discovery benches share, written through the product's own path.

Every store is built with `memdir.memory.Memory.write` (what MemoryWrite calls) and
searched with `Memory.search` (what MemorySearch and discovery call), so the searchable
text, the index and the ranking are the product's. The model's vectors are cached on
disk by text (`CachedEmbedder`): re-running a bench after a ranking change embeds nothing.

Two corpora:

* LoCoMo (`locomo_entries`): one entry per dialogue turn, written as an agent recording
  a conversation would write it: titled with who spoke and the session's date, tagged
  with the speaker, the content ``"<speaker>: <text>"`` followed by the message it
  answers (the previous turn of the same session) as a second paragraph. Nothing comes
  from the questions or answers. ``recipe="plain"`` is the earlier bench's entry
  (content ``"<speaker>: <text>"`` only, type ``experience``, no title or tags), for comparison.
* Python documentation (`docs_entries`): one entry per documented function or class of a
  fixed list of standard-library modules, from its docstring (`inspect.getdoc`). The
  query is the docstring's first sentence; the entry holds the rest of it, titled
  ``module.name`` and tagged with the module: finding it means matching a summary to
  the text it summarises, not repeating words the entry holds verbatim.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import re
import sys
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np

from memdir.core.entry import Metadata
from memdir.core.settings import Settings
from memdir.memory import Memory

HERE = Path(__file__).resolve().parent
DEFAULT_LOCOMO = HERE.parent.parent / "shared" / "data" / "locomo10.json"
CATEGORIES = (1, 2, 3, 4)
DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"


@dataclass(frozen=True)
class Doc:
    """One entry to write: path, content, title, metadata and (optionally) when it was written."""

    path: str
    content: str
    title: str = ""
    metadata: dict = field(default_factory=dict)
    updated_at: datetime | None = None


@dataclass
class Query:
    """A question and the paths that answer it (``category``: LoCoMo's, 0 for the docs corpus)."""

    text: str
    wanted: set[str]
    category: int = 0


@dataclass
class Corpus:
    """A store's entries and the questions asked of it."""

    name: str
    docs: list[Doc]
    queries: list[Query]


def vector_file(cache_dir: Path, name: str, model_id: str = DEFAULT_MODEL) -> Path:
    """Where `CachedEmbedder` keeps ``model_id``'s vectors of corpus ``name`` (one .npz per model and corpus)."""
    return cache_dir / f"{name}-{model_id.replace('/', '--')}.npz"


def load_vectors(file: Path) -> tuple[list[str], np.ndarray]:
    """A vector cache's (keys of the texts, `CachedEmbedder.key`; their vectors, a row each)."""
    data = np.load(file)
    return data["keys"].tolist(), data["vectors"]


class CachedEmbedder:
    """The real model behind an on-disk cache of vectors by text (one .npz per model and corpus)."""

    def __init__(self, embedder, cache_dir: Path, name: str) -> None:
        self.inner = embedder
        self.model_id = embedder.model_id
        self.dimensions = embedder.dimensions
        self.source = embedder.source
        self.file = vector_file(cache_dir, name, embedder.model_id)
        self.vectors: dict[str, np.ndarray] = {}
        self._dirty = False
        if self.file.exists():
            self.vectors = dict(zip(*load_vectors(self.file)))

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode()).hexdigest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = sorted({t for t in texts if self.key(t) not in self.vectors})
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing)):
                self.vectors[self.key(text)] = vector
            self._dirty = True
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return np.stack([self.vectors[self.key(t)] for t in texts])

    def save(self) -> None:
        if self._dirty:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            keys = list(self.vectors)
            np.savez(self.file, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))
            self._dirty = False


def real_embedder(cache_dir: Path, name: str) -> CachedEmbedder:
    """all-MiniLM-L6-v2 (the product's default model) behind a vector cache."""
    from memdir.embeddings.resolve import load_embedder

    return CachedEmbedder(load_embedder(None, cache_dir / "model"), cache_dir, name)


CACHED = ("locomo", "docs", "realtext", "stores", "duplicates")
"""The corpora whose vectors the benches cache (`CachedEmbedder`): LoCoMo, the documentation corpus, the real
texts of `bench_hnsw_graph.py`, `bench_discovery.py`'s stores and `bench_duplicate_list.py`'s set."""


def cached(cache: Path, name: str) -> dict[str, np.ndarray]:
    """The model's vectors cached for corpus ``name`` (`CachedEmbedder`), by their text's key."""
    keys, vectors = load_vectors(vector_file(cache, name))
    return dict(zip(keys, vectors.astype(np.float32)))


def unit(rows: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(rows / np.linalg.norm(rows, axis=1, keepdims=True), dtype=np.float32)


def every_vector(cache: Path) -> np.ndarray:
    """Every distinct vector cached for the corpora of `CACHED`, unit length, in a fixed shuffled order."""
    found = np.vstack([unit(np.array(list(cached(cache, name).values()))) for name in CACHED])
    found = found[np.sort(np.unique(found, axis=0, return_index=True)[1])]
    return found[np.random.default_rng(17).permutation(len(found))]


def write_store(root: Path, docs: Iterable[Doc], settings: Settings, embedder: CachedEmbedder) -> Memory:
    """A store at ``root`` holding ``docs``, each written with `Memory.write` (the caller closes it)."""
    memory = Memory.open(settings.with_values(root=root, agent=None), embedder=embedder)
    docs = list(docs)
    # One batched model run for the texts the writes will embed one at a time (5-10x faster).
    embedder.embed([memory._keeper.card(doc.title, Metadata.model_validate(doc.metadata), doc.content) for doc in docs])
    for doc in docs:
        memory.write(doc.path, doc.content, title=doc.title, metadata=doc.metadata, updated_at=doc.updated_at)
    embedder.save()
    return memory


# --------------------------------------------------------------------------- LoCoMo
def turn_path(dia_id: str) -> str:
    """``D12:3`` -> ``turn/d12/3.md`` (``:`` is not allowed in memory paths)."""
    session, number = dia_id.split(":")
    return f"turn/{session.lower()}/{int(number)}.md"


_DIA_ID = re.compile(r"D:?(\d+):(\d+)")


def parse_evidence(raw: list[str]) -> set[str]:
    """Evidence turn ids, repairing the data's few slips ("D8:6; D9:17", "D:11:26", "D30:05").

    Ids that name no turn stay in the set and count as misses, so every one of the
    1,536 questions with evidence is scored (as in the data README's reference figures).
    """
    found = set()
    for item in raw:
        for session, number in _DIA_ID.findall(item):
            found.add(f"D{int(session)}:{int(number)}")
    return found


def locomo_entries(sample: dict, recipe: str = "conversation") -> list[Doc]:
    """One entry per turn of one LoCoMo conversation (see the module docstring for the recipes)."""
    talk = sample["conversation"]
    sessions = sorted((k for k, v in talk.items() if k.startswith("session_") and isinstance(v, list)),
                      key=lambda k: int(k.split("_")[1]))
    docs = []
    for key in sessions:
        date = str(talk.get(f"{key}_date_time", "")).split(" on ")[-1]  # "1:56 pm on 8 May, 2023" -> "8 May, 2023"
        previous = None
        for turn in talk[key]:
            said = f"{turn['speaker']}: {turn['text']}"
            if recipe == "plain":
                docs.append(Doc(turn_path(turn["dia_id"]), said, metadata={"type": "experience"}))
                continue
            content = said if previous is None else f"{said}\n\nIn reply to {previous}"
            docs.append(Doc(turn_path(turn["dia_id"]), content, title=f"{turn['speaker']}, {date}",
                            metadata={"type": "experience", "tags": [turn["speaker"]]}))
            previous = said
    return docs


def locomo_corpora(path: Path = DEFAULT_LOCOMO, recipe: str = "conversation") -> list[Corpus]:
    """One corpus per LoCoMo conversation: its turns and its questions of categories 1-4 with evidence."""
    corpora = []
    for sample in json.loads(path.read_text()):
        queries = [
            Query(qa["question"], {turn_path(e) for e in evidence}, qa["category"])
            for qa in sample["qa"]
            if qa["category"] in CATEGORIES and (evidence := parse_evidence(qa.get("evidence", [])))
        ]
        corpora.append(Corpus(sample["sample_id"], locomo_entries(sample, recipe), queries))
    return corpora


@dataclass(frozen=True)
class Dialogue:
    """One LoCoMo conversation as said: ``"<speaker>: <text>"`` per turn, its turn ids, and its questions
    (question, evidence turn ids, category) of categories 1-4 with evidence."""

    sample_id: str
    turn_texts: list[str]
    turn_ids: list[str]
    questions: list[tuple[str, set[str], int]]


def locomo_dialogues(path: Path = DEFAULT_LOCOMO) -> list[Dialogue]:
    """Every LoCoMo conversation as a `Dialogue` (turns in session order)."""
    dialogues = []
    for sample in json.loads(path.read_text()):
        talk = sample["conversation"]
        sessions = sorted((k for k, v in talk.items() if k.startswith("session_") and isinstance(v, list)),
                          key=lambda k: int(k.split("_")[1]))
        turns = [turn for key in sessions for turn in talk[key]]
        questions = [(qa["question"], evidence, qa["category"]) for qa in sample["qa"]
                     if qa["category"] in CATEGORIES and (evidence := parse_evidence(qa.get("evidence", [])))]
        dialogues.append(Dialogue(sample["sample_id"], [f"{t['speaker']}: {t['text']}" for t in turns],
                                  [t["dia_id"] for t in turns], questions))
    return dialogues


# --------------------------------------------------------------------------- Python docs
DOC_MODULES = (
    "argparse", "base64", "bisect", "calendar", "collections", "configparser", "contextlib", "copy", "csv",
    "datetime", "difflib", "fnmatch", "fractions", "functools", "glob", "gzip", "hashlib", "heapq", "hmac",
    "html", "http.client", "ipaddress", "itertools", "json", "logging", "math", "mimetypes", "os", "os.path",
    "pathlib", "pickle", "pprint", "queue", "random", "re", "secrets", "shlex", "shutil", "socket", "sqlite3",
    "statistics", "string", "struct", "subprocess", "tarfile", "tempfile", "textwrap", "threading", "time",
    "typing", "unicodedata", "urllib.parse", "uuid", "zipfile", "zlib",
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(`'\"])")


def _split_doc(doc: str) -> tuple[str, str]:
    """(first sentence, the rest) of a docstring; the rest keeps its paragraphs."""
    paragraphs = doc.strip().split("\n\n")
    first = " ".join(paragraphs[0].split())
    head, *remainder = _SENTENCE_END.split(first, maxsplit=1)
    rest = "\n\n".join(part for part in [*remainder, *paragraphs[1:]] if part.strip())
    return head, rest


def docs_corpus(modules: Sequence[str] = DOC_MODULES, min_rest: int = 60, min_words: int = 4) -> Corpus:
    """Entries and queries from the docstrings of ``modules``' public functions and classes."""
    docs: list[Doc] = []
    queries: list[Query] = []
    seen_queries: set[str] = set()
    paths: set[str] = set()
    for module_name in modules:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = importlib.import_module(module_name)
        for name, member in sorted(vars(module).items()):
            if name.startswith("_") or not (inspect.isfunction(member) or inspect.isclass(member)
                                            or inspect.isbuiltin(member)):
                continue
            if getattr(member, "__module__", None) not in (module_name, module.__name__, f"_{module_name}"):
                continue
            doc = inspect.getdoc(member) or ""
            summary, rest = _split_doc(doc)
            path = f"concept/python/{module_name.replace('.', '-')}/{name.lower()}.md"
            if len(rest) < min_rest or len(summary.split()) < min_words or summary in seen_queries or path in paths:
                continue
            seen_queries.add(summary)
            paths.add(path)
            docs.append(Doc(path, rest, title=f"{module_name}.{name}",
                            metadata={"type": "concept", "tags": [module_name], "domain": "python"}))
            queries.append(Query(summary, {path}))
    return Corpus(f"python-docs (Python {sys.version_info.major}.{sys.version_info.minor})", docs, queries)


def recall_at(ranked: Sequence[str], wanted: set[str], k: int) -> float:
    """Share of ``wanted`` among the first ``k`` of ``ranked``."""
    return len(set(ranked[:k]) & wanted) / len(wanted)
