"""Spawn-to-ready latency of `memdir serve`: how long a client waits for `initialize` and `tools/list`.

Usage::

    python bench/bench_serve_startup.py [--runs 10] [--entries 1000]

Each run spawns a fresh ``python -m memdir serve`` over stdio (the way Claude Desktop and
Claude Code start it) against a root holding ``--entries`` entries, and times, with the
official MCP client, spawn -> ``initialize`` answered -> ``tools/list`` answered. The model
is enabled: it loads in the background, so it must not delay either answer. Prints medians.

Interleaved with those runs, it times the same handshake with a bare server built on the
official SDK (one tool, nothing else): the floor any SDK-based server pays (mostly the
SDK's own import, 0.55-0.9 s here depending on the machine's load), so the share memdir
adds on top is visible whatever the machine's speed.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parent.parent


def populate(root: Path, count: int) -> None:
    """Write entries without a model (fast); the server embeds them later in the background."""
    os.environ["MEMDIR_EMBEDDINGS_ENABLED"] = "false"
    from memdir.core.settings import Settings
    from memdir.memory import Memory

    with Memory.open(Settings(root=root)) as memory:
        for i in range(count):
            memory.write(f"fact/bench/e{i}", f"Benchmark fact number {i} about topic {i % 37}.",
                         title=f"Fact {i}", metadata={"type": "fact", "tags": [f"t{i % 11}"]})
    del os.environ["MEMDIR_EMBEDDINGS_ENABLED"]


BARE_SERVER = """
from mcp.server.mcpserver import MCPServer
server = MCPServer("bare")
@server.tool()
def echo(text: str) -> str:
    return text
server.run()
"""


async def one_run(root: Path, cache: Path, *, bare: bool = False) -> tuple[float, float]:
    """(seconds to initialize, seconds to tools/list) after spawning memdir (or the bare SDK server)."""
    env = {**os.environ, "MEMDIR_ROOT": str(root), "MEMDIR_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    args = ["-c", BARE_SERVER] if bare else ["-m", "memdir", "serve"]
    params = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(root))
    started = time.perf_counter()
    async with Client(params) as client:
        initialized = time.perf_counter() - started
        await client.list_tools()
        listed = time.perf_counter() - started
    return initialized, listed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--entries", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root, cache = Path(tmp) / "root", Path(tmp) / "cache"
        populate(root, args.entries)
        anyio.run(one_run, root, cache)  # warm-up: builds the ONNX cache file once, as `memdir setup` would
        runs, bare = [], []
        for _ in range(args.runs):
            runs.append(anyio.run(one_run, root, cache))
            bare.append(anyio.run(functools.partial(one_run, root, cache, bare=True)))
    init = [r[0] * 1000 for r in runs]
    listed = [r[1] * 1000 for r in runs]
    bare_listed = [r[1] * 1000 for r in bare]
    print(f"memdir serve, {args.entries} entries, {args.runs} runs (target: both within 1000 ms of spawn)")
    print(f"  spawn -> initialize answered: median {statistics.median(init):7.0f} ms   max {max(init):7.0f} ms")
    print(f"  spawn -> tools/list answered: median {statistics.median(listed):7.0f} ms   max {max(listed):7.0f} ms")
    print(f"  a bare SDK server (one tool), spawn -> tools/list: median {statistics.median(bare_listed):7.0f} ms")
    print(f"  memdir's share (median difference): {statistics.median(listed) - statistics.median(bare_listed):7.0f} ms")
    print(f"  load average now: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
