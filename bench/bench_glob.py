"""MemoryGlob ``**/*`` at 100K entries, in the cases a user meets: unchanged, first after open,
after a write by this process, after a write by another process, after a hand edit.

    python bench/bench_glob.py [--entries 100000] [--runs 5] [--cache DIR]
    python bench/bench_glob.py --entries 10000 --runs 3     # a quick run

Writes N entries straight in the on-disk format (``.md`` + ``.yml``, 4 types in 200
folders; no ``.emb``: listings never read vectors) under ``--cache`` once, opens the root
once to build its derived index (keyword only), then prints median and p95 of:

* opening the unchanged root in a fresh process (`Memory.open`, no model), and the first
  ``MemoryGlob("**/*")`` there right after (target: open <= 2 s at 100K; the glob reads the
  listing snapshot beside the index, `memdir.storage.directory.listing_snapshot`), the same with no
  snapshot (the glob reads every row from SQLite and writes the snapshot), and 3 s after a
  server's open (which reads the listing rows in the background);
* ``MemoryGlob("**/*")`` — the tool's whole answer (500 newest listed) — in one open `Memory`:
  with nothing changed; right after this process wrote one entry; right after another
  process (a second `Memory` on the root, in its own process) wrote one; right after a file
  was added by hand; right after an entry's ``.md`` was rewritten by hand as editors save
  (a new file renamed over it). Target <= 300 ms at 100K in every case;
* ``MemoryGlob("concept/folder-7/*")`` — a narrow glob — and ``Memory.list()``, unchanged;

and the same ``**/*`` listing built the old way, parsing every ``.yml`` (for scale). Each line gives
wall-clock median and p95 and the median CPU time of the process that listed (on a shared,
busy machine the wall time mostly measures the wait for a CPU; the load average is printed).
Every case but the first two changes one folder just before the glob, so the folder it
changed is re-listed: its mtime is too recent to be trusted yet (`memdir.storage.directory.folder_stamps`).
The entries the bench writes overwrite the same few paths, so the root keeps its size.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memdir.core.settings import Settings  # noqa: E402
from memdir.memory import Memory  # noqa: E402
from memdir.storage.sidecar import dump_sidecar  # noqa: E402
from memdir.tools.memory_glob import memory_glob  # noqa: E402
from memdir.tools.session import Session  # noqa: E402

TYPES = ("concept", "fact", "skill", "experience")
WORDS = "alpha beta gamma delta index cache query branch deploy schema token cluster".split()

# Run in a fresh process: open the root, list it once (a server's way: opened for the background,
# and listing a little later); prints wall and CPU seconds of the open and of the first glob.
_OPEN_AND_GLOB = """
import sys, time
sys.path.insert(0, {repo!r})
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.tools.memory_glob import memory_glob
from memdir.tools.session import Session
started, cpu = time.perf_counter(), time.process_time()
memory = Memory.open(Settings(root={root!r}, embeddings_enabled=False), load_model=False, background={server})
opened, opened_cpu = time.perf_counter(), time.process_time()
if {server}:
    time.sleep(3)  # an MCP client's handshake and first turn take longer than this
    opened, opened_cpu = time.perf_counter(), time.process_time()
memory_glob(memory, Session(), "**/*")
print(opened - started, opened_cpu - cpu, time.perf_counter() - opened, time.process_time() - opened_cpu)
memory.close()
"""

# Another process that keeps the root open and writes one entry per line it reads ("ok" when done).
_WRITER = """
import sys
sys.path.insert(0, {repo!r})
from memdir.core.settings import Settings
from memdir.memory import Memory
memory = Memory.open(Settings(root={root!r}, embeddings_enabled=False), load_model=False)
print("ready", flush=True)
for line in sys.stdin:
    path = line.strip()
    memory.write(path, "Written by another process.", title="From elsewhere")
    print("ok", flush=True)
memory.close()
"""


def write_root(root: Path, entries: int) -> None:
    """``entries`` entries in SwarmMemory's on-disk format, written directly (no index, no model)."""
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for i in range(entries):
        kind = TYPES[i % 4]
        path = f"{kind}/folder-{i % 200}/entry-{i}.md"
        content = f"# Entry {i}\n\n" + " ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(60)) + "\n"
        md = root / path
        md.parent.mkdir(parents=True, exist_ok=True)
        md.write_text(content, encoding="utf-8")
        sidecar = {
            "title": f"Entry {i} about {WORDS[i % len(WORDS)]}", "file_path": path,
            "updated_at": start + timedelta(minutes=i * 37 % 500_000), "size": len(content.encode()), "hits": i % 5,
            "metadata": {"type": kind, "tags": [WORDS[i % len(WORDS)]]},
        }
        md.with_suffix(".yml").write_bytes(dump_sidecar(sidecar))


Times = list[tuple[float, float]]  # (wall seconds, CPU seconds of this process) per run


def timed(fn: Callable[[], object], runs: int, before: Callable[[int], object] | None = None) -> Times:
    """Wall and CPU seconds each of ``runs`` calls of ``fn`` took; ``before(run)`` runs untimed ahead of each."""
    times = []
    for run in range(runs):
        if before is not None:
            before(run)
        started, cpu = time.perf_counter(), time.process_time()
        fn()
        times.append((time.perf_counter() - started, time.process_time() - cpu))
    return times


def report(label: str, times: Times) -> None:
    """Median and p95 wall time, and the median CPU time (what the work costs on a busy machine)."""
    walls = sorted(wall for wall, _ in times)
    p95 = walls[min(len(walls) - 1, round(0.95 * (len(walls) - 1)))]
    cpu = statistics.median(cpu for _, cpu in times)
    print(f"{label:<52} median {statistics.median(walls) * 1000:8.1f} ms   p95 {p95 * 1000:8.1f} ms"
          f"   cpu {cpu * 1000:8.1f} ms   (n={len(times)})")


def open_in_fresh_processes(
    root: Path, runs: int, *, server: bool = False, no_snapshot: bool = False
) -> tuple[Times, Times]:
    """(open, first glob) wall and CPU seconds of ``runs`` fresh processes opening the unchanged root;
    ``server``: opened as the server opens it (reading the listing rows in the background), the glob 3 s later;
    ``no_snapshot``: the listing snapshot removed before each (the glob writes it anew)."""
    opens, globs = [], []
    for _ in range(runs):
        if no_snapshot:
            (root / ".memdir" / "listing.snapshot").unlink(missing_ok=True)
        script = _OPEN_AND_GLOB.format(repo=str(REPO), root=str(root), server=server)
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
        open_wall, open_cpu, glob_wall, glob_cpu = map(float, out.split())
        opens.append((open_wall, open_cpu))
        globs.append((glob_wall, glob_cpu))
    return opens, globs


class OtherProcess:
    """A second process with the root open, writing one entry when asked."""

    def __init__(self, root: Path) -> None:
        script = _WRITER.format(repo=str(REPO), root=str(root))
        self.proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout.readline().strip() == "ready"

    def write(self, path: str) -> None:
        self.proc.stdin.write(path + "\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "ok"

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def edit_by_hand(root: Path, run: int) -> None:
    """Rewrite an entry's ``.md`` as an editor saves: a new file renamed over the old one."""
    md = root / "fact" / "folder-13" / "entry-13.md"
    temp = md.with_name(".entry-13.md.swp")
    temp.write_text(f"# Entry 13\n\nEdited by hand, time {run}.\n", encoding="utf-8")
    os.replace(temp, md)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/memdir-bench-glob"))
    args = parser.parse_args()

    root = args.cache / f"root-{args.entries}"
    if not (root / ".written").exists():
        started = time.perf_counter()
        write_root(root, args.entries)
        (root / ".written").write_text("ok")
        print(f"wrote {args.entries} entries in {time.perf_counter() - started:.0f}s")
    settings = Settings(root=root, embeddings_enabled=False)
    started = time.perf_counter()
    Memory.open(settings, load_model=False).close()
    print(f"open (index built or checked): {time.perf_counter() - started:.1f}s, {args.entries} entries")
    print("load average (1, 5, 15 min): {:.1f} {:.1f} {:.1f} on {} CPUs: wall times grow with it, CPU times hardly\n".format(
        *os.getloadavg(), os.cpu_count()))

    opens, firsts = open_in_fresh_processes(root, args.runs)
    report("open the unchanged root (fresh process)", opens)
    report("first MemoryGlob('**/*') after open", firsts)
    report("the same, no listing snapshot (the glob writes it)", open_in_fresh_processes(root, args.runs, no_snapshot=True)[1])
    report("first MemoryGlob('**/*') in a server, 3 s after open", open_in_fresh_processes(root, args.runs, server=True)[1])

    hand_added: list[Path] = []

    def add_by_hand(run: int) -> None:
        md = root / "skill" / "folder-6" / f"by-hand-{run}.md"
        md.write_text(f"# Added by hand {run}\n\nno sidecar\n", encoding="utf-8")
        hand_added.append(md)

    with Memory.open(settings, load_model=False) as memory:
        session = Session()
        glob_all = lambda: memory_glob(memory, session, "**/*")  # noqa: E731
        glob_all()
        report("MemoryGlob('**/*'), nothing changed", timed(glob_all, args.runs))
        report(
            "MemoryGlob('**/*') after a write by this process",
            timed(glob_all, args.runs, lambda run: memory.write(
                f"concept/folder-0/bench-write-{run}.md", f"Written here, time {run}.", title="Written here")),
        )
        other = OtherProcess(root)
        try:
            report(
                "MemoryGlob('**/*') after a write by another process",
                timed(glob_all, args.runs, lambda run: other.write(f"experience/folder-3/bench-other-{run}.md")),
            )
        finally:
            other.close()
        report("MemoryGlob('**/*') after a file added by hand", timed(glob_all, args.runs, add_by_hand))
        report("MemoryGlob('**/*') after an .md saved by hand", timed(glob_all, args.runs, lambda run: edit_by_hand(root, run)))
        report("MemoryGlob('concept/folder-7/*')", timed(lambda: memory_glob(memory, session, "concept/folder-7/*"), args.runs))
        report("Memory.list()", timed(memory.list, args.runs))
        report("every .yml parsed (the old way)", timed(lambda: list(memory.adapter.iter_entries()), 1))
        listed = {info.path for info in memory.list()}
        expected = {f"skill/folder-6/{md.name}" for md in hand_added} | {"experience/folder-3/bench-other-0.md"}
        assert expected <= listed, f"not listed: {sorted(expected - listed)}"
        print(f"\n{glob_all().splitlines()[0]}")
    for md in hand_added:  # the root keeps its size for the next run
        md.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
