"""Cold latency of `memdir discover`, the Claude Code UserPromptSubmit hook.

Usage::

    python bench/bench_discover_hook.py [--entries 1000] [--runs 10]

Builds a temporary root with ~1K entries of all four types (embedded with the real
model when one is installed), then spawns ``python -m memdir discover`` N times with a
hook payload on stdin — each run a fresh process, as Claude Code runs it — and prints
median and p95 wall time, with the real model and keyword-only
(``MEMDIR_EMBEDDINGS_ENABLED=false``), plus the bare interpreter and CLI start-up
for reference.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memdir.core.settings import Settings  # noqa: E402
from memdir.memory import Memory  # noqa: E402

TOPICS = ["git", "python", "docker", "postgres", "react", "kubernetes", "testing", "security", "billing", "search"]
VERBS = ["configure", "debug", "deploy", "migrate", "profile", "review", "rollback", "monitor", "index", "cache"]
NOUNS = ["branch", "container", "query", "component", "cluster", "fixture", "token", "invoice", "ranking", "schema"]
TYPES = ["concept", "fact", "skill", "experience"]
PROMPT = "my docker container keeps restarting after the deploy, how do I debug it?"


def build_root(root: Path, entries: int) -> str:
    """Write ``entries`` synthetic entries and embed them; returns the model state afterwards."""
    rng = random.Random(7)
    settings = Settings(root=root)
    with Memory.open(settings, load_model=False) as memory:
        for i in range(entries):
            topic, verb, noun, kind = rng.choice(TOPICS), rng.choice(VERBS), rng.choice(NOUNS), TYPES[i % 4]
            words = " ".join(rng.choice(TOPICS + VERBS + NOUNS) for _ in range(60))
            memory.write(
                f"{kind}/{topic}/{verb}-{noun}-{i}.md",
                f"How to {verb} the {noun} in {topic}. {words}",
                title=f"{verb.title()} {topic} {noun} ({i})",
                metadata={"type": kind, "tags": [topic, verb, noun]},
            )
    with Memory.open(settings) as memory:  # embed everything in batches, as `memdir rebuild` does
        memory.rebuild()
        return memory.model.state.value


def timed(command: list[str], stdin: str, env: dict[str, str], runs: int) -> tuple[list[float], str]:
    times, output = [], ""
    for _ in range(runs):
        started = time.perf_counter()
        result = subprocess.run(command, input=stdin, capture_output=True, text=True, env=env)
        times.append(time.perf_counter() - started)
        output = result.stdout
        if result.returncode != 0 or result.stderr.strip():
            print(f"  ! {' '.join(command[-3:])}: {result.stderr.strip()[:200]}")
    return times, output


def report(label: str, times: list[float]) -> None:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    print(f"{label:<38} median {statistics.median(times) * 1000:7.0f} ms   p95 {p95 * 1000:7.0f} ms   (n={len(times)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memory"
        started = time.perf_counter()
        state = build_root(root, args.entries)
        print(f"root: {args.entries} entries, model {state}, built in {time.perf_counter() - started:.1f}s\n")
        payload = json.dumps({"session_id": "bench", "cwd": tmp, "hook_event_name": "UserPromptSubmit", "prompt": PROMPT})
        base_env = {**os.environ, "MEMDIR_CONFIG": str(Path(tmp) / "memdir.toml")}
        hook = [sys.executable, "-m", "memdir", "discover", "--root", str(root)]

        report("python -c pass", timed([sys.executable, "-c", "pass"], "", base_env, args.runs)[0])
        report("memdir --help", timed([sys.executable, "-m", "memdir", "--help"], "", base_env, args.runs)[0])
        keyword_times, keyword_out = timed(hook, payload, {**base_env, "MEMDIR_EMBEDDINGS_ENABLED": "false"}, args.runs)
        report("memdir discover (keyword only)", keyword_times)
        model_times, model_out = timed(hook, payload, base_env, args.runs)
        report(f"memdir discover (model {state})", model_times)
        for label, out in (("keyword only", keyword_out), ("model", model_out)):
            context = json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""
            print(f"\n{label}: {len(context)} chars of context, ~{len(context) // 4} tokens")


if __name__ == "__main__":
    main()
