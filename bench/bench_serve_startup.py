"""Spawn-to-ready latency of `memdir serve`: how long a client waits for `initialize` and `tools/list`.

Usage::

    python bench/bench_serve_startup.py [--runs 10] [--entries 1000]

Each run spawns a fresh ``python -m memdir serve`` over stdio (the way Claude Desktop and
Claude Code start it) against a root holding ``--entries`` entries, and times, with the
official MCP client, spawn -> ``initialize`` answered -> ``tools/list`` answered. The model
is enabled: it loads in the background, so it must not delay either answer. Prints medians.

Interleaved with those runs, it times a bare ``python -c "import mcp.server.mcpserver"``:
the floor any server built on the official SDK pays before it can read its first message,
so the figure memdir adds on top of the SDK is visible whatever the machine's speed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
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


async def one_run(root: Path, cache: Path) -> tuple[float, float]:
    env = {**os.environ, "MEMDIR_ROOT": str(root), "MEMDIR_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "memdir", "serve"], env=env, cwd=str(root))
    started = time.perf_counter()
    async with Client(params) as client:
        initialized = time.perf_counter() - started
        await client.list_tools()
        listed = time.perf_counter() - started
    return initialized, listed


def sdk_import() -> float:
    """Seconds from spawning an interpreter to its having imported the MCP SDK's server (not its exit)."""
    code = "import mcp.server.mcpserver, mcp.server.stdio; print('ready', flush=True)"
    started = time.perf_counter()
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE) as child:
        child.stdout.readline()  # type: ignore[union-attr]
        elapsed = time.perf_counter() - started
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--entries", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root, cache = Path(tmp) / "root", Path(tmp) / "cache"
        populate(root, args.entries)
        anyio.run(one_run, root, cache)  # warm-up: builds the ONNX cache file once, as `memdir setup` would
        runs, floor = [], []
        for _ in range(args.runs):
            runs.append(anyio.run(one_run, root, cache))
            floor.append(sdk_import() * 1000)
    init = [r[0] * 1000 for r in runs]
    listed = [r[1] * 1000 for r in runs]
    print(f"memdir serve, {args.entries} entries, {args.runs} runs (target: both within 1000 ms of spawn)")
    print(f"  spawn -> initialize answered: median {statistics.median(init):7.0f} ms   max {max(init):7.0f} ms")
    print(f"  spawn -> tools/list answered: median {statistics.median(listed):7.0f} ms   max {max(listed):7.0f} ms")
    print(f"  the SDK's own import (python -c 'import mcp.server.mcpserver'): median {statistics.median(floor):7.0f} ms")
    print(f"  memdir's share of tools/list (median difference): {statistics.median(listed) - statistics.median(floor):7.0f} ms")
    print(f"  load average now: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
