"""The web view's page weights and load times, on a store an agent filled over MCP.

Usage::

    python bench/bench_web.py [--entries 400] [--rounds 5] [--data /work/shared/data/locomo10.json]

A real `memdir serve --http` (default settings: the real model, researcher mode) is filled
through the official MCP client as an agent fills it: ``--entries`` MemoryWrite calls, one per
LoCoMo dialogue turn (titled with the speaker and date, tagged with the speaker, each linking
to the turn it answers), one working-memory thread of 20 messages, one episode. Then every
page of the web view is fetched ``--rounds`` times, pages interleaved within each round, with
a token as a browser sends it. Printed per page: its weight (the HTML is the whole page: styles
are inline, the link picture is inline SVG, there is no script, font or image to fetch) and
the median and slowest time to the last byte.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx2

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memdir.server.tokens import TokenFile  # noqa: E402
from tests.server.http_process import mcp_client, running_server  # noqa: E402


def turns(data: Path, limit: int) -> list[dict]:
    sample = json.loads(data.read_text())[0]["conversation"]
    found = []
    for key in sorted((k for k, v in sample.items() if k.startswith("session_") and isinstance(v, list)),
                      key=lambda k: int(k.split("_")[1])):
        date = str(sample.get(f"{key}_date_time", "")).split(" on ")[-1]
        found += [{**turn, "date": date} for turn in sample[key]]
    return found[:limit]


async def fill(url: str, token: str, entries: list[dict]) -> None:
    async with mcp_client(url, token) as client:
        previous = None
        for turn in entries:
            path = f"experience/locomo/{turn['dia_id'].replace(':', '-')}.md"
            result = await client.call_tool("MemoryWrite", {
                "file_path": path, "title": f"{turn['speaker']} on {turn['date']}", "type": "experience",
                "content": f"{turn['speaker']}: {turn['text']}", "tags": [turn["speaker"].lower()],
                "related": [previous] if previous else [], "domain": "conversation"})
            assert not result.is_error, result.content[0].text
            previous = path
        for number, turn in enumerate(entries[:20]):
            await client.call_tool("ThreadAppend", {"thread": "chat", "role": "user" if number % 2 == 0 else "assistant",
                                                    "content": turn["text"]})
        await client.call_tool("EpisodeRecord", {"name": "Talk about the support group", "outcome": "success",
                                                 "summary": "Caroline told Melanie about the LGBTQ support group.",
                                                 "tags": ["conversation"]})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/locomo10.json"))
    args = parser.parse_args()
    entries = turns(args.data, args.entries)
    middle = f"experience/locomo/{entries[len(entries) // 2]['dia_id'].replace(':', '-')}.md"
    pages = {"entries": "/", "recent": "/?sort=recent", "by tag": "/?tag=caroline", "entry": f"/entry/{middle}",
             "edit": f"/edit/{middle}", "history": f"/audit/{middle}", "search": "/search?q=support+group+adoption",
             "health": "/health", "defrag preview": "/defrag/merge_duplicates", "threads": "/threads", "thread": "/threads/chat", "episodes": "/episodes"}
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        env = {"MEMDIR_ROOT": str(home / "memory"), "MEMDIR_CONFIG": str(home / "memdir.toml"),
               "MEMDIR_HTTP_TOKENS_FILE": str(home / "tokens.json"), "MEMDIR_EMBEDDINGS_ENABLED": "true"}
        os.environ.update(env)
        token = TokenFile(home / "tokens.json").create("bench")
        with running_server(["--mode", "researcher"], env=env, cwd=home) as server:
            start = time.perf_counter()
            anyio.run(fill, server.url, token, entries)
            print(f"filled {len(entries)} entries over MCP in {time.perf_counter() - start:.0f} s "
                  f"(load {os.getloadavg()[0]:.2f})", flush=True)
            times: dict[str, list[float]] = {name: [] for name in pages}
            weight: dict[str, int] = {}
            with httpx2.Client(base_url=server.base, headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
                for _ in range(args.rounds):
                    for name, address in pages.items():
                        began = time.perf_counter()
                        response = http.get(address)
                        times[name].append(time.perf_counter() - began)
                        assert response.status_code == 200, (address, response.status_code, response.text[:300])
                        weight[name] = len(response.content)
    print(f"{'page':15} {'weight':>9} {'median':>8} {'slowest':>8}   (load {os.getloadavg()[0]:.2f})")
    for name in pages:
        print(f"{name:15} {weight[name] / 1024:7.1f} kB {statistics.median(times[name]) * 1000:6.0f} ms "
              f"{max(times[name]) * 1000:6.0f} ms")


if __name__ == "__main__":
    main()
