"""Memory that evolves: background jobs over a memory root.

* `memdir.evolution.importance` — importance recalibration from use;
* `memdir.evolution.decay` — link strength decay and removal;
* `memdir.evolution.archival` — archival of unused entries (never deletes; `unarchive`);
* `memdir.evolution.consolidation` — clusters of near-duplicates merged, superseded or kept;
* `memdir.evolution.runner` — one run of a job: its cross-process lock, budget and record;
* `memdir.evolution.history` — the run record under ``<root>/evolution/`` (the importance history is
  `memdir.storage.evolution_records`, which the derived index replays).

The server's scheduler (`memdir.server.scheduler`) runs due jobs while the store is idle;
``memdir evolve`` runs them by hand.
"""

from __future__ import annotations

from memdir.evolution.archival import ArchivalJob
from memdir.evolution.consolidation import ConsolidationJob
from memdir.evolution.decay import LinkDecayJob
from memdir.evolution.importance import ImportanceJob
from memdir.evolution.runner import Job

JOBS: dict[str, Job] = {job.name: job for job in (ImportanceJob(), LinkDecayJob(), ArchivalJob(), ConsolidationJob())}
"""Every job by name, in the order `memdir evolve all` and the scheduler run them."""

__all__ = ["JOBS"]
