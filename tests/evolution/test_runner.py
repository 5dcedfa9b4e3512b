"""One job run: its lock across processes, its budget (batch size, timeout), due-ness and its record."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta

import pytest

from memdir.core.errors import JobBusyError
from memdir.evolution import JOBS
from memdir.evolution.history import RunRecord, read_runs, record_run
from memdir.evolution.runner import JobContext, JobOutcome, is_due, job_lock, run_job


class CountingJob:
    """Walks ten items (``item-0`` … ``item-9``), taking ``pause`` seconds each; every item counts as a change."""

    name = "counting"
    title = "counting"

    def __init__(self, pause: float = 0.0) -> None:
        self.pause = pause
        self.seen: list[str] = []

    def interval(self, settings) -> timedelta:
        return timedelta(days=7)

    def run(self, memory, context: JobContext) -> JobOutcome:
        outcome = JobOutcome()
        for name in context.each([f"item-{n}" for n in range(10)], str, outcome):
            time.sleep(self.pause)
            self.seen.append(name)
            outcome.changed += 1
        return outcome


class FailingJob(CountingJob):
    name = "failing"

    def run(self, memory, context):
        raise RuntimeError("boom")


def test_a_run_is_recorded_with_every_field(memory):
    record = run_job(memory, CountingJob())
    assert (record.job, record.status, record.processed, record.changed, record.error, record.cursor) == (
        "counting", "complete", 10, 10, None, None)
    assert datetime.fromisoformat(record.started) <= datetime.fromisoformat(record.finished)
    line = (memory.root / "evolution" / "runs.jsonl").read_text().splitlines()[-1]
    assert set(__import__("json").loads(line)) == {
        "job", "started", "finished", "status", "processed", "changed", "error", "dry_run", "cursor"}
    assert read_runs(memory.adapter.records) == [RunRecord(**{**record.to_json(), "details": []})]


def test_a_batch_stops_the_run_and_the_next_scheduled_one_goes_on(memory):
    job = CountingJob()
    first = run_job(memory, job, scheduled=True, batch_size=4)
    assert (first.status, first.processed, first.cursor) == ("partial", 4, "item-3")
    second = run_job(memory, job, scheduled=True, batch_size=4)
    third = run_job(memory, job, scheduled=True, batch_size=4)
    assert (second.cursor, third.status, third.processed) == ("item-7", "complete", 2)
    assert job.seen == [f"item-{n}" for n in range(10)]  # each item once
    assert run_job(memory, job, scheduled=True, batch_size=4) is None  # covered: not due for a week


def test_a_timeout_stops_the_run_between_items(memory):
    job = CountingJob(pause=0.05)
    record = run_job(memory, job, timeout=0.12)
    assert record.status == "timeout" and 1 <= record.processed < 10 and record.cursor == job.seen[-1]


def test_a_busy_store_interrupts_the_run(memory):
    calls = iter(range(100))
    record = run_job(memory, CountingJob(), busy=lambda: next(calls) >= 3)
    assert (record.status, record.processed, record.cursor) == ("interrupted", 3, "item-2")


def test_a_failing_job_is_recorded_and_does_not_raise(memory):
    record = run_job(memory, FailingJob())
    assert (record.status, record.error) == ("error", "RuntimeError: boom")
    assert read_runs(memory.adapter.records, "failing")[-1].status == "error"


def test_due_after_the_interval_or_after_an_unfinished_run(memory):
    job, settings = CountingJob(), memory.settings
    now = datetime.now(UTC)

    def run(status: str, days_ago: float, dry_run: bool = False) -> RunRecord:
        at = (now - timedelta(days=days_ago)).isoformat()
        return RunRecord("counting", at, at, status, 1, 1, dry_run=dry_run)

    assert is_due(job, [], settings, now)
    assert not is_due(job, [run("complete", 1)], settings, now)
    assert is_due(job, [run("complete", 8)], settings, now)
    assert is_due(job, [run("complete", 1), run("timeout", 0)], settings, now)
    assert not is_due(job, [run("complete", 1), run("complete", 0, dry_run=True)], settings, now)  # dry runs do not count
    assert is_due(JOBS["consolidation"], [run("complete", 1.5)], settings, now)  # daily


def test_the_lock_is_exclusive_within_a_process(memory):
    with job_lock(memory.root, "counting"):
        with pytest.raises(JobBusyError, match="running in another process"):
            run_job(memory, CountingJob())
    assert run_job(memory, CountingJob()).status == "complete"


HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from memdir.evolution.runner import job_lock

    with job_lock(Path(sys.argv[1]), sys.argv[2]):
        print("locked", flush=True)
        sys.stdin.read()  # hold the lock until the test closes our stdin
    """
)


@pytest.mark.slow
def test_a_second_process_holding_the_lock_keeps_the_job_from_running(memory):
    """A real second process takes the importance job's lock: this process neither waits nor runs it."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(memory.root), "importance"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        with pytest.raises(JobBusyError):
            run_job(memory, JOBS["importance"], scheduled=True)
        assert time.monotonic() - started < 1.0  # non-blocking
        assert read_runs(memory.adapter.records, "importance") == []  # not run, so not recorded
        assert run_job(memory, JOBS["archival"]).status == "complete"  # other jobs are not held up
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)
    assert run_job(memory, JOBS["importance"], scheduled=True).status == "complete"


def test_history_skips_torn_and_foreign_lines(memory):
    record_run(memory.adapter.records, RunRecord("counting", "2026-01-01T00:00:00+00:00", "2026-01-01T00:00:01+00:00", "complete", 1, 0))
    with (memory.root / "evolution" / "runs.jsonl").open("a") as handle:
        handle.write('{"job": "x"}\n["not", "a", "record"]\n{"job": "counting", "sta')
    assert [run.job for run in read_runs(memory.adapter.records)] == ["counting"]
