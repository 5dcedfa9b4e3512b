"""The evolution scheduler inside the server: jobs run only when the store is idle, one at a time, within
their timeout and batch size, and a call to the store interrupts them."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import memdir.evolution
from memdir.core.settings import Settings
from memdir.evolution.history import read_runs
from memdir.evolution.runner import JobContext, JobOutcome, job_lock
from memdir.server.scheduler import Scheduler
from memdir.server.state import MemoryHost
from memdir.storage.evolution_records import RecordFiles
from tests.fakes import FakeEmbedder


class SlowJob:
    """Walks twenty items, ``pause`` seconds each."""

    title = "slow"

    def __init__(self, name: str, pause: float = 0.0) -> None:
        self.name, self.pause = name, pause
        self.active = 0
        self.most_active = 0

    def interval(self, settings) -> timedelta:
        return timedelta(days=1)

    def run(self, memory, context: JobContext) -> JobOutcome:
        self.active += 1
        self.most_active = max(self.most_active, sum(job.active for job in memdir.evolution.JOBS.values()))
        outcome = JobOutcome()
        try:
            for _ in context.each([f"item-{n:02d}" for n in range(20)], str, outcome):
                time.sleep(self.pause)
                outcome.changed += 1
        finally:
            self.active -= 1
        return outcome


def make(tmp_path, monkeypatch, jobs, **settings) -> tuple[Scheduler, MemoryHost]:
    monkeypatch.setattr(memdir.evolution, "JOBS", {job.name: job for job in jobs})
    values = {"evolution_idle_minutes": 1.0, "evolution_check_seconds": 0.05, **settings}
    config = Settings(root=tmp_path / "memory", **values)
    host = MemoryHost(config, embedder=FakeEmbedder())
    host.memory()  # opened, as after the handshake
    return Scheduler(config, host), host


def go_idle(host: MemoryHost, minutes: float = 2.0) -> None:
    host.last_used = time.monotonic() - minutes * 60


def runs(host: MemoryHost) -> list:
    return read_runs(host.memory().adapter.records)


def test_nothing_runs_while_the_store_is_in_use_and_due_jobs_run_once_it_is_idle(tmp_path, monkeypatch):
    scheduler, host = make(tmp_path, monkeypatch, [SlowJob("one"), SlowJob("two")])

    async def scenario():
        serving = asyncio.ensure_future(scheduler.serve())
        await asyncio.sleep(0.3)  # used a moment ago (the opening): not idle
        before = runs(host)
        go_idle(host)
        for _ in range(100):
            await asyncio.sleep(0.05)
            if len(runs(host)) == 2:
                break
        scheduler.stop()
        await serving
        return before

    try:
        assert asyncio.run(scenario()) == []
        assert [(run.job, run.status, run.processed) for run in runs(host)] == [("one", "complete", 20), ("two", "complete", 20)]
        assert scheduler.idle() and not asyncio.run(scheduler.run_due())  # done: not due again today
    finally:
        host.close()


def test_jobs_run_one_at_a_time(tmp_path, monkeypatch):
    jobs = [SlowJob("one", 0.01), SlowJob("two", 0.01), SlowJob("three", 0.01)]
    scheduler, host = make(tmp_path, monkeypatch, jobs)
    go_idle(host)
    try:
        asyncio.run(scheduler.run_due())
        assert [run.job for run in runs(host)] == ["one", "two", "three"]
        assert max(job.most_active for job in jobs) == 1
    finally:
        host.close()


def test_the_timeout_and_batch_size_bound_each_run_and_the_next_goes_on(tmp_path, monkeypatch):
    slow = SlowJob("slow", 0.05)
    scheduler, host = make(tmp_path, monkeypatch, [slow], evolution_job_timeout=0.2, evolution_batch_size=1000)
    go_idle(host)
    try:
        first = asyncio.run(scheduler.run_due())[0]
        assert first.status == "timeout" and 1 <= first.processed < 20
        scheduler.settings = scheduler.settings.with_values(evolution_job_timeout=60.0, evolution_batch_size=5)
        second = asyncio.run(scheduler.run_due())[0]
        assert (second.status, second.processed) == ("partial", 5)
        assert int(second.cursor[-2:]) == int(first.cursor[-2:]) + 5  # it went on from where the timeout stopped it
    finally:
        host.close()


def test_a_tool_call_interrupts_the_running_job(tmp_path, monkeypatch):
    slow = SlowJob("slow", 0.05)
    scheduler, host = make(tmp_path, monkeypatch, [slow, SlowJob("next")])
    go_idle(host)

    async def scenario():
        running = asyncio.ensure_future(scheduler.run_due())
        await asyncio.sleep(0.3)
        listed = await host.run(lambda memory: len(memory.list()), read_only=True)  # a tool call
        return await running, listed

    try:
        records, _ = asyncio.run(scenario())
        assert [(record.job, record.status) for record in records] == [("slow", "interrupted")]  # "next" waits
        assert 0 < records[0].processed < 20
    finally:
        host.close()


def test_a_job_locked_by_another_process_is_skipped(tmp_path, monkeypatch):
    scheduler, host = make(tmp_path, monkeypatch, [SlowJob("one"), SlowJob("two")])
    go_idle(host)
    try:
        with job_lock(host.memory().root, "one"):
            records = asyncio.run(scheduler.run_due())
        assert [record.job for record in records] == ["two"]
    finally:
        host.close()


BASE = ("Deploy the billing service with blue green switching behind the load balancer, drain old pods first, "
        "watch error rates for ten minutes, then remove the old colour and tag the release in git with its version")


def test_an_idle_server_consolidates_with_the_clients_model_through_mcp_sampling(tmp_path):
    """The real server and MCP client (in memory): after the client's calls the store goes idle, the
    scheduler runs the due jobs and consolidation asks the client's model, which decides."""
    import anyio
    import mcp_types as types
    from mcp import Client

    from memdir.memory import Memory
    from memdir.server.app import build_server

    settings = Settings(root=tmp_path / "memory", evolution_idle_minutes=0.01, evolution_check_seconds=0.1)
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        memory.write("concept/deploy/a.md", BASE, title="Deploying billing")
        memory.write("concept/deploy/b.md", BASE + " now", title="Deploying billing")
    prompts: list[str] = []

    async def sampler(_context, params):
        prompts.append(params.messages[0].content.text)
        reply = "ACTION: supersede\nKEEP: concept/deploy/a.md\nREASON: a says it all"
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=reply), model="test")

    async def scenario():
        async with Client(build_server(settings, embedder=FakeEmbedder()), mode="legacy", sampling_callback=sampler) as client:
            await client.call_tool("MemoryRead", {"file_path": "concept/deploy/a.md"})
            with anyio.fail_after(20):
                while len(read_runs(RecordFiles(settings.store_root))) < 4:
                    await anyio.sleep(0.1)
            return (await client.call_tool("MemoryRead", {"file_path": "concept/deploy/b.md"})).content[0].text

    anyio.run(scenario)
    assert [run.job for run in read_runs(RecordFiles(settings.store_root))] == ["importance", "links", "archival", "consolidation"]
    assert len(prompts) == 1 and "## concept/deploy/b.md" in prompts[0]
    with Memory.open(settings, embedder=FakeEmbedder()) as memory:
        assert memory.read("concept/deploy/b.md").metadata.superseded_by == "concept/deploy/a.md"


def test_a_failure_outside_the_jobs_does_not_stop_the_server(tmp_path, monkeypatch):
    """The runs' record cannot be written (``evolution`` is a file): logged, and the scheduler goes on."""
    scheduler, host = make(tmp_path, monkeypatch, [SlowJob("one")])
    (host.memory().root / "evolution").write_text("not a folder")
    go_idle(host)

    async def scenario():
        serving = asyncio.ensure_future(scheduler.serve())
        await asyncio.sleep(0.4)  # several checks, each failing
        alive = not serving.done()
        scheduler.stop()
        await serving
        return alive

    try:
        assert asyncio.run(scenario())
    finally:
        host.close()
