"""The web view's listing, first page or filtered by type, tag or recency, reads its page of a PostgreSQL store, not the store.

The pages are asked over HTTP, as a browser asks them, of the server's whole HTTP application
(token check included) run in this process on stores of two sizes; PostgreSQL's own statistics
say what each page read (as `tests.server.test_rows_read` counts the MCP calls).
"""

from __future__ import annotations

import httpx2
import pytest

from memdir.core.settings import Settings
from memdir.server.app import build_server
from memdir.server.http import http_app
from memdir.server.tokens import TokenFile
from tests.fakes import FakeEmbedder
from tests.server.http_process import serving
from tests.server.test_rows_read import LARGE, SMALL, fill, flush_statistics, rows_read, store_url

pytestmark = pytest.mark.postgres

PAGES = {"first page": "/", "by type": "/?type=fact", "by a rare tag": "/?tag=tag5", "by a common tag": "/?tag=common",
         "recent": "/?sort=recent", "recent of a type": "/?sort=recent&type=skill",
         "folder and type": "/?folder=fact&type=fact"}


def reads_per_page(url: str, tmp_path, count: int) -> dict[str, int]:
    root = tmp_path / str(count)
    fill(url, root, count, tags=lambda i: [f"tag{i}", *(["common"] if i % 3 == 1 else [])])  # a tag of one, of a third
    settings = Settings(root=root, store=url, web_page_size=20, hook_socket=False, evolution_enabled=False)
    tokens = TokenFile(tmp_path / f"tokens-{count}.json")
    token = tokens.create("viewer")
    server = build_server(settings, embedder=FakeEmbedder())
    app, _ = http_app(server, settings, "127.0.0.1", tokens)
    found = {}
    with serving(app, lambda: server.app_state is not None) as base, httpx2.Client(
        base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as http:
        for name, page in PAGES.items():
            counts = []
            for _ in range(2):  # the smaller of two: what the server does meanwhile is not charged to the page
                flush_statistics(server)
                before = rows_read(url)
                answer = http.get(page)
                assert answer.status_code == 200, answer.text
                flush_statistics(server)
                counts.append(rows_read(url) - before)
            found[name] = min(counts)
            assert 'id="entries"' in answer.text
        assert "fact/topic5/entry5.md" in http.get("/?tag=tag5").text
    return found


def test_a_filtered_listing_reads_its_page_not_the_store(pg_cluster, tmp_path):
    small = reads_per_page(store_url(pg_cluster), tmp_path, SMALL)
    large = reads_per_page(store_url(pg_cluster), tmp_path, LARGE)
    print(f"rows read per page, {SMALL} / {LARGE} entries:", {name: (small[name], large[name]) for name in small})
    grew = {name: large[name] - small[name] for name in small}
    # Reading every entry reads ~1,200 rows more on the larger store; reading a page, about the same on both.
    # The planner may walk a common tag's rows on the small store by another index than on the large one
    # (270 or 470 rows for the same page), so the bound is half of a scan's growth, not a quarter.
    assert {name: more for name, more in grew.items() if more > (LARGE - SMALL) // 2} == {}, (small, large)
