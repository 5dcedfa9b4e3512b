"""What compiling a search's steps after the scan with numba would cost a served process: memory, the
first search's wait, and where its compiled code is kept.

Usage::

    python bench/bench_jit_cost.py [--runs 3]

numba is not one of memdir's dependencies: run this where it is installed (``pip install numba``, or
``pip install --target DIR numba`` and ``PYTHONPATH=DIR``). Each measurement is a fresh process that
imports numpy (as a server has), then numba, then compiles functions of the shape of the steps a
search runs after the scan over its ~100 candidates (each query word's weighted share, the words the
candidates' neighbours hold, the tag bit counts, the fused score), and calls them once:

* ``import``: the import's wall time and the growth of the resident set it brings (numba loads LLVM);
* ``compile``: the first calls' wall time and the resident set after them, without a cache
  (``cache=False``), then with numba's on-disk cache cold and warm (``cache=True``: the second
  process loads what the first compiled);
* ``read-only``: the functions in a folder no one may write to (``chattr +i``), as an installed
  package's is to its user, twice: whether numba keeps its cache elsewhere (under ``HOME``) and finds it;
* ``per call``: the compiled steps against the same steps in numpy, on arrays of a search's size.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

STEPS = '''
import numpy as np
import numba

@numba.njit(cache=CACHE)
def weighted_sum(weights, rows):
    out = np.zeros(rows.shape[1])
    for t in range(rows.shape[0]):
        for i in range(rows.shape[1]):
            if rows[t, i]:
                out[i] += weights[t]
    return out

@numba.njit(cache=CACHE)
def context_gain(owner, neighbour_held, own_held, weights):
    terms, count = own_held.shape
    gained = np.zeros((terms, count), dtype=np.bool_)
    for t in range(terms):
        for j in range(owner.shape[0]):
            if neighbour_held[t, j] and not own_held[t, owner[j]]:
                gained[t, owner[j]] = True
    return weighted_sum(weights, gained)

@numba.njit(cache=CACHE)
def tag_counts(tag_bits, offsets):
    out = np.zeros(offsets.shape[0] - 1)
    for i in range(offsets.shape[0] - 1):
        mask = 0
        for j in range(offsets[i], offsets[i + 1]):
            mask |= tag_bits[j]
        n = 0
        while mask:
            mask &= mask - 1
            n += 1
        out[i] = n
    return out

@numba.njit(cache=CACHE)
def fused(cosines, bm25, keyword, tag, context, weights):
    best = bm25.max() if bm25.shape[0] else 0.0
    out = np.empty(cosines.shape[0])
    for i in range(cosines.shape[0]):
        b = bm25[i] / best if best > 0 else 0.0
        out[i] = (weights[0] * max(cosines[i], 0.0) + weights[1] * b + weights[2] * keyword[i]
                  + weights[3] * tag[i] + weights[4] * context[i]) / weights.sum()
    return out
'''

CHILD = '''
import sys, time, resource
def rss():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024
import numpy as np
before = rss()
started = time.perf_counter()
import numba
imported, after_import = time.perf_counter() - started, rss()
sys.path.insert(0, sys.argv[1])
started = time.perf_counter()
import steps
rng = np.random.default_rng(0)
n, terms = 100, 4
args = dict(
    weights=rng.random(terms), rows=rng.random((terms, n)) < 0.3,
    owner=np.repeat(np.arange(n), 6), neighbour_held=rng.random((terms, 6 * n)) < 0.2, own_held=rng.random((terms, n)) < 0.3,
    tag_bits=rng.integers(0, 8, 3 * n), offsets=np.arange(0, 3 * n + 1, 3),
    vectors=[rng.random(n) for _ in range(5)], fusion=np.array([0.5, 0.1, 0.1, 0.4, 0.11]),
)
def compiled():
    steps.weighted_sum(args["weights"], args["rows"])
    steps.context_gain(args["owner"], args["neighbour_held"], args["own_held"], args["weights"])
    steps.tag_counts(args["tag_bits"], args["offsets"])
    steps.fused(*args["vectors"], args["fusion"])
def numpy_steps():
    w, rows = args["weights"], args["rows"]
    (w[:, None] * rows).cumsum(axis=0)[-1]
    gained = np.zeros(args["own_held"].shape, dtype=bool)
    t, j = args["neighbour_held"].nonzero()
    gained[t, args["owner"][j]] = True
    gained &= ~args["own_held"]
    (w[:, None] * gained).cumsum(axis=0)[-1]
    bits, offsets = args["tag_bits"], args["offsets"]
    np.bitwise_count(np.bitwise_or.reduceat(bits, offsets[:-1]))
    c, b, k, tg, cx = args["vectors"]
    f = args["fusion"]
    best = b.max()
    (f[0] * np.maximum(c, 0) + f[1] * b / best + f[2] * k + f[3] * tg + f[4] * cx) / f.sum()
compiled()
first, after_first = time.perf_counter() - started, rss()
def per_call(fn, runs=2000):
    times = []
    for _ in range(runs):
        t = time.perf_counter(); fn(); times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2] * 1e6
print(imported, before, after_import, first, after_first, per_call(compiled), per_call(numpy_steps))
'''


def run(folder: Path, cache: bool, env: dict[str, str], *, write: bool = True) -> list[float]:
    """One fresh process's figures (see `CHILD`), with the steps (written into ``folder`` first) compiled."""
    if write:
        (folder / "steps.py").write_text(STEPS.replace("CACHE", str(cache)))
    command = [sys.executable, "-c", CHILD, str(folder)]
    out = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return [float(value) for value in out.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="processes per case")
    args = parser.parse_args()
    try:
        numba = importlib.import_module("numba")
    except ImportError:
        sys.exit("numba is not installed here: pip install numba (or --target DIR, then PYTHONPATH=DIR)")
    env = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    print(f"numba {numba.__version__}, Python {sys.version.split()[0]}, load {os.getloadavg()[0]:.1f}")
    cases: dict[str, list[list[float]]] = {"no cache": [], "cache cold": [], "cache warm": [],
                                         "read-only, 1st": [], "read-only, 2nd": []}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as work:
            folder = Path(work)
            folder.chmod(0o755)
            cases["no cache"].append(run(folder, False, env))
            cases["cache cold"].append(run(folder, True, env))
            cases["cache warm"].append(run(folder, True, env))
            read_only, home = folder / "installed", folder / "home"
            read_only.mkdir()
            home.mkdir()
            (read_only / "steps.py").write_text(STEPS.replace("CACHE", "True"))
            if subprocess.run(["chattr", "+i", str(read_only)], capture_output=True).returncode == 0:
                try:  # (immutable: not even root writes there, as an installed package's folder is to its user)
                    for case in ("read-only, 1st", "read-only, 2nd"):
                        cases[case].append(run(read_only, True, {**env, "HOME": str(home)}, write=False))
                finally:
                    subprocess.run(["chattr", "-i", str(read_only)], check=True)
                kept = sorted({str(p.parent.relative_to(home)) for p in home.rglob("*.nbi")})
                print(f"  read-only folder: numba kept the compiled code under HOME at {kept or 'nowhere'}")
    for name, runs in cases.items():
        if not runs:
            continue
        imported, before, after_import, first, after_first, compiled, numpy_steps = (statistics.median(c) for c in zip(*runs))
        print(f"{name:>16}: import {imported * 1e3:.0f} ms, RSS {before:.0f} -> {after_import:.0f} MB; first calls "
              f"{first * 1e3:.0f} ms, RSS then {after_first:.0f} MB (+{after_first - before:.0f} MB); per call: compiled "
              f"{compiled:.1f} us, numpy {numpy_steps:.1f} us")


if __name__ == "__main__":
    main()
