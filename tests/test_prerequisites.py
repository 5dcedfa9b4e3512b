"""The README's test command on a machine set up differently: a missing prerequisite skips in one
line (fails in CI), and a plain user's PATH (no /usr/sbin) still runs the PostgreSQL tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
ONE_POSTGRES_TEST = "tests/storage/test_postgres_search.py::test_candidates_read_ahead_what_the_separate_reads_give"

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def run_pytest(**env: str) -> subprocess.CompletedProcess[str]:
    plain = {key: value for key, value in os.environ.items() if key not in ("CI", "PATH")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", ONE_POSTGRES_TEST],
                          cwd=PROJECT, env={**plain, "PATH": "/usr/local/bin:/usr/bin:/bin", **env},
                          capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only: the cluster then runs as another user, through runuser")
def test_a_plain_path_without_sbin_still_starts_the_cluster():
    result = run_pytest()
    assert result.returncode == 0 and "1 passed" in result.stdout, result.stdout[-2000:]


@pytest.mark.skipif(os.geteuid() != 0, reason="as root only: MEMDIR_TEST_PG_USER names the user the cluster runs as")
def test_a_missing_prerequisite_skips_in_one_line_and_fails_in_ci():
    skipped = run_pytest(MEMDIR_TEST_PG_USER="no-such-user-here")
    assert skipped.returncode == 0 and "1 skipped" in skipped.stdout, skipped.stdout[-2000:]
    (reason,) = [line for line in skipped.stdout.splitlines() if line.startswith("SKIPPED")]
    assert "no user 'no-such-user-here'" in reason and "install Debian's postgresql package" in reason
    assert "Traceback" not in skipped.stdout
    failed = run_pytest(MEMDIR_TEST_PG_USER="no-such-user-here", CI="true")
    assert failed.returncode == 1 and "no user 'no-such-user-here'" in failed.stdout
