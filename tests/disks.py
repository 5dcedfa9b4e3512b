"""Real small and read-only disks for fault tests: tmpfs mounts (CI runs as root).

Where mounting is not permitted, the tests that need one are skipped with the reason.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def tmpfs(where: Path, size: str = "3m") -> Iterator[Path]:
    """A fresh tmpfs of ``size`` mounted at ``where`` (created), unmounted afterwards."""
    where.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"needs permission to mount a tmpfs (root, as in CI): {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def remount(where: Path, mode: str) -> None:
    """Remount the tmpfs at ``where`` ``"ro"`` or ``"rw"``."""
    subprocess.run(["mount", "-o", f"remount,{mode}", str(where)], check=True, capture_output=True)
