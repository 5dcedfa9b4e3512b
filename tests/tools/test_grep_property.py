"""Property: any regular expression MemoryGrep is given ends within its time and memory budget,
with a result or a clear error.

Hypothesis generates patterns (nested groups, lookarounds, backreferences, possessive and
lazy quantifiers, counted repeats up to 10**11, nested counted repeats, alternations of up
to 100,000 words, thousands of nested groups, backtracking classics, verbose-mode tricks and
plain junk) and calls the tool with each. The run happens in a child process under an
address-space limit (RLIMIT_AS), so a pattern that would take gigabytes ends the run with a
MemoryError instead of taking the machine; the child reports its peak resident memory and
its slowest call, and the test checks both against the budget. The memory searched holds a
line of 300,001 characters: the engine keeps an entry per character for a repeated group.

A second child greps lines of 3,000,000 and 90,001 characters with repeated groups.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import reduce
from pathlib import Path

import pytest

ADDRESS_SPACE = 1536 * 2**20  # bytes; the child needs ~300 MB of address space to run at all
MEMORY_BUDGET_MB = 64  # peak RSS growth allowed over the run (largest allowed pattern compiles in ~15 MB)
LONG_LINE_BUDGET_MB = 64  # the same for repeated groups searched over a 3 MB line
REPEATED_GROUPS = ("(.)*", "(a|b)*", "((x)y)*", r"(.)*\1")
TIME_LIMIT = 0.5  # grep_time_limit in the child
CALL_BUDGET = TIME_LIMIT + 5  # seconds one call may take: matching's limit, plus reading, compiling, a busy machine
EXAMPLES = 150


def _child(function: str, tmp_path: Path, time_limit: float) -> dict:
    """Run ``function`` of this module in a child process; its figures (the last line it prints, JSON)."""
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "MEMDIR_GREP_TIME_LIMIT": str(time_limit)}
    done = subprocess.run(
        [sys.executable, "-c", f"from tests.tools.test_grep_property import {function}; {function}({str(tmp_path)!r})"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_every_generated_pattern_ends_within_budget_with_a_result_or_a_clear_error(tmp_path):
    report = _child("main", tmp_path, TIME_LIMIT)
    assert report["calls"] >= EXAMPLES
    assert report["refused"] and report["answered"]  # both kinds of outcome were exercised
    assert report["rss_growth_mb"] <= MEMORY_BUDGET_MB, report
    assert report["slowest_call_s"] <= CALL_BUDGET, report


@pytest.mark.slow
def test_repeated_groups_take_no_memory_in_proportion_to_a_3_mb_line(tmp_path):
    """The engine keeps a capture per pass of a repeated group: (.)* took 443 MB on the 3 MB line.

    Searched as (?:.)*, a line of 90,001 characters takes nothing; a line over
    grep_max_line_chars is refused to a pattern that repeats a group, with the reason.
    """
    report = _child("long_lines", tmp_path, time_limit=30)  # time is not what is measured
    assert report["rss_growth_mb"] <= LONG_LINE_BUDGET_MB, report
    assert "fact/long.md" in report["^ab"]  # the long line is searched by other patterns
    for pattern in REPEATED_GROUPS:
        assert "fact/long.md has a line of 3,000,000 characters" in report[f"{pattern} everywhere"], report
        assert "grep_max_line_chars" in report[f"{pattern} everywhere"]
        assert report[f"{pattern} in fact/wide.md"].startswith("Memory entries matching"), report


# --------------------------------------------------------------------------- the child
def _strategies():
    from hypothesis import strategies as st

    atoms = st.sampled_from(
        ["a", "b", "!", "é", "ß", ".", r"\d", r"\w", r"\s", r"\b", "^", "$", r"\p{L}", "[a-c]", "[^a]", "[[:alpha:]]",
         r"\1", r"\g<1>", r"\n", r"\A", r"\Z", "(?R)", "(?1)", "(?&n)", "(?:ab){e<=2}", "(?:a+){e<=1}", "(?e)(?:aa){i}"]
    )
    counts = st.one_of(st.integers(0, 5), st.integers(0, 2000), st.sampled_from([999, 1000, 1001, 10**6, 10**7, 10**9, 10**11]))
    counted = st.one_of(
        counts.map(lambda n: f"{{{n}}}"),
        st.tuples(counts, counts).map(lambda t: f"{{{min(t)},{max(t)}}}"),
        counts.map(lambda n: f"{{{n},}}"),
        counts.map(lambda n: f"{{,{n}}}"),
    )
    quantifiers = st.one_of(st.sampled_from(["*", "+", "?", "*?", "+?", "??", "*+", "++"]), counted,
                            st.tuples(counted, st.sampled_from(["", "?", "+"])).map("".join))
    openers = st.sampled_from(["(", "(?:", "(?=", "(?!", "(?<=", "(?<!", "(?>", "(?i:", "(?P<n>", "(?x)("])
    regexes = st.recursive(
        atoms,
        lambda inner: st.one_of(
            st.tuples(inner, quantifiers).map("".join),
            st.lists(inner, min_size=2, max_size=4).map("".join),
            st.lists(inner, min_size=2, max_size=4).map("|".join),
            st.tuples(openers, inner).map(lambda t: f"{t[0]}{t[1]})"),
        ),
        max_leaves=12,
    )
    nasty = st.one_of(
        st.integers(1, 3000).map(lambda depth: "(" * depth + "a" + ")" * depth),
        st.integers(1, 3000).map(lambda depth: "(?:" * depth + "a" + ")" * depth),
        st.lists(st.integers(1, 3000), min_size=1, max_size=4).map(
            lambda ns: reduce(lambda body, n: f"(?:{body}){{{n}}}", ns, "a")
        ),
        st.integers(1, 100_000).map(lambda n: "|".join(f"w{i}" for i in range(n))),
        st.integers(1, 10**7).map(lambda n: f"(?x)(a{{{n}}}) {{{n}}}"),
        st.sampled_from(["(a|aa)+$", "(a+)+$", "(a*)*b", "(?:a|a)*!x", r"(\w+\s?)+$", "(.*a){20}", r"(a)\1*+(?R)?"]),
        st.text(max_size=60),
    )
    return st.one_of(regexes, nasty, st.tuples(regexes, nasty).map("".join))


def main(tmp: str) -> None:
    """Run the property in this process (the test's child) and print its figures as one JSON line."""
    import resource
    import time

    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from memdir.core.errors import InputValidationError
    from memdir.core.settings import Settings
    from memdir.memory import Memory
    from memdir.tools.memory_grep import OUTPUT_MODES, memory_grep
    from memdir.tools.session import Session
    from tests.fakes import FakeEmbedder

    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    memory = Memory.open(Settings(root=Path(tmp) / "memory"), embedder=FakeEmbedder())
    memory.write("fact/runaway.md", "a" * 3000 + "!", title="Runaway aaa", metadata={"type": "fact", "tags": ["aa"]})
    memory.write("fact/prose.md", "Ruby classes are blueprints.\nSchloß, café, naïve.\n" * 50, title="Prose",
                 metadata={"type": "fact"})
    memory.write("concept/words.md", "\n".join(f"w{i} b{i}" for i in range(2000)), title="Words",
                 metadata={"type": "concept", "tags": ["w1", "b2"]})
    # One line longer than grep_max_line_chars: a pattern that repeats a group is refused it.
    memory.write("fact/long.md", "ab" * 150_000 + "!", title="Long", metadata={"type": "fact"})
    session = Session()
    figures = {"calls": 0, "answered": 0, "refused": 0, "slowest_call_s": 0.0, "slowest_pattern": ""}
    baseline_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(pattern=_strategies(), mode=st.sampled_from(OUTPUT_MODES), case_insensitive=st.booleans())
    def property_(pattern: str, mode: str, case_insensitive: bool) -> None:
        started = time.monotonic()
        try:
            answer = memory_grep(memory, session, pattern, case_insensitive=case_insensitive, output_mode=mode)
            assert isinstance(answer, str) and answer
            figures["answered"] += 1
        except InputValidationError as exc:  # a clear error: what was wrong and how to fix it
            assert exc.message and exc.hint, repr(exc)
            figures["refused"] += 1
        elapsed = time.monotonic() - started
        figures["calls"] += 1
        if elapsed > figures["slowest_call_s"]:
            figures["slowest_call_s"], figures["slowest_pattern"] = round(elapsed, 3), pattern[:80]
        assert elapsed <= CALL_BUDGET, f"{pattern[:200]!r} took {elapsed:.1f} s"

    property_()
    memory.close()
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    figures["rss_growth_mb"] = round((peak_kb - baseline_kb) / 1024, 1)
    print(json.dumps(figures))


def long_lines(tmp: str) -> None:
    """Grep lines of 3,000,000 and 90,001 characters with repeated groups (in this process, the test's child)."""
    import resource

    from memdir.core.errors import InputValidationError
    from memdir.core.settings import Settings
    from memdir.memory import Memory
    from memdir.tools.memory_grep import memory_grep
    from memdir.tools.session import Session
    from tests.fakes import FakeEmbedder

    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    memory = Memory.open(Settings(root=Path(tmp) / "memory"), embedder=FakeEmbedder())
    memory.write("fact/long.md", "ab" * 1_500_000, title="Long", metadata={"type": "fact"})
    memory.write("fact/wide.md", "xy" * 45_000 + "y", title="Wide", metadata={"type": "fact"})
    session = Session()
    figures: dict[str, object] = {"^ab": memory_grep(memory, session, "^ab")}
    baseline_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for pattern in REPEATED_GROUPS:
        for path in (None, "fact/wide.md"):
            try:
                answer = memory_grep(memory, session, pattern, path=path)
            except InputValidationError as exc:
                answer = exc.message
            figures[f"{pattern} {f'in {path}' if path else 'everywhere'}"] = answer
    figures["rss_growth_mb"] = round((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - baseline_kb) / 1024, 1)
    memory.close()
    print(json.dumps(figures))
