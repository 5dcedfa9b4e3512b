"""Benchmark what bounding user regular expressions costs, and what it saves.

Usage::

    python bench/bench_grep_budget.py [--runs 5] [--grep-seconds 4]

(``PYTHONPATH=<other checkout>`` makes (d) start that checkout's server, e.g. main's for "before".)

Prints medians of:

(a) `check_cost` on ordinary grep patterns (the overhead every grep now pays before
    compiling), next to an uncached ``regex.compile`` of the same patterns;
(b) the time MemoryGrep's pattern check takes to refuse the issue's memory bombs
    (``a{10000000}``, ``a{1000000000}``, ``((a{1000}){1000}){1000}``, 100,000 alternatives);
(c) for scale, what compiling a bomb 10x smaller than the issue's ``a{10000000}`` costs
    the engine when nothing stops it (CPU seconds and peak RSS, in a child process);
(d) through the real server and MCP client over stdio: how long a MemoryRead takes when
    sent while a grep runs into its time limit (``--grep-seconds``), next to the same
    read on an idle server (main made the read wait for the whole grep);
(e) peak RSS growth of grepping one line (``abab…b``, ``xyxy…y``) of 3,000,001 and 90,001 characters
    with patterns that repeat a group, each in a child process: the engine given the
    pattern as written and counting with ``findall`` (what main did), next to `GrepPattern`
    (groups nothing refers to made non-capturing; a line over its bound refused).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ORDINARY = [r"TODO|FIXME", r"def \w+", r"\d{4}-\d{2}-\d{2}", r"(?i)ruby\s+class(es)?", r"[A-Z][a-z]+Error\b",
            r"^#+ .{0,80}$", r"(?:foo|bar|baz){2,5}", "|".join(f"name{i}" for i in range(200))]
BOMBS = ["a{10000000}", "a{1000000000}", "((a{1000}){1000}){1000}", "|".join(f"w{i}" for i in range(100_000))]


def _median_us(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def bench_check(runs: int) -> None:
    import regex

    from memdir.core.errors import InputValidationError
    from memdir.core.settings import Settings
    from memdir.core.user_regex import RegexBudget, check_cost

    budget = RegexBudget.from_settings(Settings())
    check = _median_us(lambda: [check_cost(p, budget) for p in ORDINARY], runs * 20) / len(ORDINARY)
    compile_ = _median_us(lambda: [regex.compile(p, cache_pattern=False) for p in ORDINARY], runs * 20) / len(ORDINARY)
    print(f"(a) check_cost per ordinary pattern: {check:.1f} us (regex.compile of the same: {compile_:.1f} us)")

    def refuse(pattern: str) -> None:
        try:
            check_cost(pattern, budget)
        except InputValidationError:
            return
        raise AssertionError(f"{pattern[:40]} was not refused")

    for pattern in BOMBS:
        print(f"(b) refusing {pattern[:30]!r}{'...' if len(pattern) > 30 else ''}: {_median_us(lambda: refuse(pattern), runs):.1f} us")  # noqa: B023 — timed here


def bench_unbounded_compile() -> None:
    child = (
        "import regex, resource, time; t = time.process_time(); regex.compile('a{1000000}', cache_pattern=False); "
        "print(round(time.process_time() - t, 2), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)"
    )
    cpu, rss = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True).stdout.split()
    print(f"(c) unbounded regex.compile('a{{1000000}}'): {cpu} s CPU, peak RSS {rss} MB (now refused in (b))")


async def _read_latency(root: Path, grep_seconds: float, runs: int) -> tuple[float, float]:
    from mcp import Client, StdioServerParameters

    (root / "memdir.toml").write_text(f"grep_time_limit = {grep_seconds}\n")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memdir", "serve", "--root", str(root / "memory"), "--workspace", str(root)],
        env={"MEMDIR_CONFIG": str(root / "memdir.toml"), "MEMDIR_EMBEDDINGS_ENABLED": "false",
             **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {})},  # another checkout's server
        cwd=str(root),
    )
    async with Client(params, mode="legacy") as client:
        for path, content in (("fact/runaway.md", "a" * 3000 + "!"), ("fact/note.md", "A short note.")):
            await client.call_tool("MemoryWrite", {"file_path": path, "content": content, "title": path, "type": "fact",
                                                   "tags": [], "related": [], "domain": "bench"})

        async def read() -> float:
            started = time.perf_counter()
            await client.call_tool("MemoryRead", {"file_path": "fact/note.md"})
            return time.perf_counter() - started

        idle = [await read() for _ in range(runs)]
        busy = []
        for _ in range(runs):
            grep = asyncio.ensure_future(client.call_tool("MemoryGrep", {"pattern": "(a|aa)+$"}))
            await asyncio.sleep(0.5)
            busy.append(await read())
            await grep
    return statistics.median(idle), statistics.median(busy)


REPEATED_GROUPS = {"(.)*": "ab", "(a|b)*": "ab", "((x)y)*": "xy", r"(.)*\1": "ab"}  # pattern: what its line repeats
_GREP_ONE_LINE = """
import resource, sys, regex
from memdir.core.errors import InputValidationError
from memdir.core.settings import Settings
from memdir.core.user_regex import RegexBudget
from memdir.search.text_search import GrepPattern, grep_content
way, pattern, unit, chars = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
line = unit * (chars // 2) + unit[-1]  # two equal characters at the end: (.)*\\1 matches without backtracking far
grep = GrepPattern(pattern, False, RegexBudget.from_settings(Settings(grep_time_limit=60)))
written = regex.compile(pattern, regex.MULTILINE, cache_pattern=False)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    if way == "now":
        grep_content(grep, "long.md", line)
    else:
        len(written.findall(line, timeout=60))
    outcome = "answered"
except InputValidationError:
    outcome = "refused"
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024, outcome)
"""


def bench_repeated_groups(runs: int) -> None:
    for chars in (3_000_000, 90_000):
        for pattern, unit in REPEATED_GROUPS.items():
            shown = []
            for way in ("as written", "now"):
                growth, outcome = [], ""
                for _ in range(runs):
                    out = subprocess.run([sys.executable, "-c", _GREP_ONE_LINE, way, pattern, unit, str(chars)],
                                         capture_output=True, text=True, check=True).stdout.split()
                    growth.append(float(out[0]))
                    outcome = out[1]
                shown.append(f"{way} {statistics.median(growth):.0f} MB ({outcome})")
            print(f"(e) {pattern!r} over a line of {chars + 1:,} characters: peak RSS growth " + ", ".join(shown))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--grep-seconds", type=float, default=4.0)
    args = parser.parse_args()
    bench_check(args.runs)
    bench_unbounded_compile()
    with tempfile.TemporaryDirectory() as tmp:
        idle, busy = asyncio.run(_read_latency(Path(tmp), args.grep_seconds, max(1, args.runs // 2)))
    print(f"(d) MemoryRead: {idle * 1000:.0f} ms on an idle server; {busy * 1000:.0f} ms while a grep runs "
          f"into its {args.grep_seconds:g} s limit (sent 0.5 s after it)")
    bench_repeated_groups(max(1, args.runs // 2))


if __name__ == "__main__":
    main()
