"""Latency of the Claude Code hooks `memdir discover` (UserPromptSubmit) and `memdir hook session-start`,
cold and with a memdir server for the same root running.

Usage::

    python bench/bench_discover_hook.py [--entries 10000] [--runs 20] [--cache DIR]

Builds a root with N entries of all four types (embedded with the real model when one is
installed; cached under ``--cache`` so a second run starts at once), then spawns
``python -m memdir discover`` and ``python -m memdir hook session-start`` with a hook payload
on stdin — each run a fresh process, as Claude Code runs it — and prints median and p95
wall time: cold (the hook opens the store and loads the model itself; also keyword-only,
``MEMDIR_EMBEDDINGS_ENABLED=false``), then with ``memdir serve`` running for the same root
(the hook asks it over the root's local socket, `memdir.core.hook_socket`), plus the bare
interpreter and CLI start-up for reference. Targets with a server, 10K entries:
p50 <= 150 ms, p95 <= 300 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memdir.core import hook_socket  # noqa: E402
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


def cached_root(cache: Path, entries: int) -> Path:
    """The benchmark root of ``entries`` entries, built once under ``cache``."""
    root = cache / f"hook-root-{entries}"
    if not (root / ".built").exists():
        shutil.rmtree(root, ignore_errors=True)
        started = time.perf_counter()
        state = build_root(root, entries)
        (root / ".built").write_text(state)
        print(f"built {entries} entries (model {state}) in {time.perf_counter() - started:.0f}s")
    return root


@contextlib.contextmanager
def running_server(root: Path, env: dict[str, str]):
    """`memdir serve` for ``root`` (stdio held open), once it answers discovery with its model loaded."""
    server = subprocess.Popen([sys.executable, "-m", "memdir", "serve", "--root", str(root)], stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        started = time.perf_counter()
        request = {"kind": "discover", "prompt": PROMPT, "include_skills": True}
        while hook_socket.ask(root, request, timeout=5.0) is None:  # declined while the model loads
            if server.poll() is not None or time.perf_counter() - started > 300:
                raise SystemExit("memdir serve did not come up")
            time.sleep(0.2)
        print(f"server ready (store open, model loaded) in {time.perf_counter() - started:.1f}s")
        yield server
    finally:
        server.stdin.close()  # end of stdio: the server shuts down
        server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-hook")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = cached_root(args.cache, args.entries)
        state = (root / ".built").read_text()
        print(f"root: {root} ({args.entries} entries, model {state}), {args.runs} runs each\n")
        payload = json.dumps({"session_id": "bench", "cwd": tmp, "hook_event_name": "UserPromptSubmit", "prompt": PROMPT})
        start_payload = json.dumps({"session_id": "bench", "cwd": tmp, "hook_event_name": "SessionStart", "source": "startup"})
        base_env = {**os.environ, "MEMDIR_CONFIG": str(Path(tmp) / "memdir.toml")}
        hook = [sys.executable, "-m", "memdir", "discover", "--root", str(root)]
        session_start = [sys.executable, "-m", "memdir", "hook", "session-start", "--root", str(root)]

        report("python -c pass", timed([sys.executable, "-c", "pass"], "", base_env, args.runs)[0])
        report("memdir --help", timed([sys.executable, "-m", "memdir", "--help"], "", base_env, args.runs)[0])
        keyword_times, keyword_out = timed(hook, payload, {**base_env, "MEMDIR_EMBEDDINGS_ENABLED": "false"}, args.runs)
        report("cold: discover (keyword only)", keyword_times)
        model_times, model_out = timed(hook, payload, base_env, args.runs)
        report(f"cold: discover (model {state})", model_times)
        report("cold: hook session-start", timed(session_start, start_payload, base_env, args.runs)[0])
        print()
        with running_server(root, base_env):
            served_times, served_out = timed(hook, payload, base_env, args.runs)
            report("server running: discover", served_times)
            report("server running: hook session-start", timed(session_start, start_payload, base_env, args.runs)[0])
        print(f"\nsame reminder with and without the server: {served_out == model_out}")
        for label, out in (("keyword only", keyword_out), ("model", model_out)):
            context = json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""
            print(f"{label}: {len(context)} chars of context, ~{len(context) // 4} tokens")


if __name__ == "__main__":
    main()
