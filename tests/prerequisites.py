"""Tests whose system prerequisites (PostgreSQL with pgvector, Chromium) are missing.

On a developer's machine such a test skips with one line that says what to install, so
the README's test command passes anywhere; in CI (``CI=true``, which `.ci/run` installs
everything for) the same line fails the test instead, so nothing is silently left out.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def missing_prerequisite(message: str) -> NoReturn:
    """Skip the test saying ``message`` (what is missing and how to install it); fail under CI=true."""
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)
