"""The tool tests run against both stores: the directory and PostgreSQL (`store_kind`)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def both_stores(store_kind):
    return store_kind
