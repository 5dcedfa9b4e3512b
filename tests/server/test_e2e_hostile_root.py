"""End to end over stdio: a root holding a named pipe, a symlink loop and sidecars linked out of it.

The server answers each call on such a file with a clear tool error and keeps serving: a read
of a named pipe used to block the server's memory thread, and every later call with it.
"""

from __future__ import annotations

import os

import anyio
import pytest

from tests.server.test_e2e_stdio import call, connect, dirs, refused, write  # noqa: F401 — fixtures

pytestmark = pytest.mark.anyio


async def test_hostile_files_get_clear_tool_errors_and_the_server_keeps_serving(dirs):  # noqa: F811 — the fixture
    outside = dirs / "outside"
    outside.mkdir()
    (outside / "secret.yml").write_text("title: OUTSIDE-SECRET\nhits: 77\n", encoding="utf-8")
    async with connect(dirs) as client:
        await write(client, "fact/ok.md", "fine", "fact")
        root = dirs / "memory"
        os.mkfifo(root / "fact/pipe.md")
        (root / "fact/loop.md").symlink_to("loop.md")
        (root / "fact/ok.yml").unlink()
        (root / "fact/ok.yml").symlink_to(outside / "secret.yml")
        with anyio.fail_after(30):
            assert "not a regular file" in await refused(client, "MemoryRead", file_path="fact/pipe.md")
            assert "symbolic links that loop" in await refused(client, "MemoryRead", file_path="fact/loop.md")
            assert "outside the memory root" in await refused(client, "MemoryRead", file_path="fact/ok.md")
            listing = await call(client, "MemoryGlob", pattern="fact/*")
            assert "fact/ok.md" in listing and "OUTSIDE-SECRET" not in listing and "pipe" not in listing
