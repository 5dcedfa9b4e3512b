"""Working memory: a thread's events, reduced to state, compacted, assembled into a context.

    ThreadAppend ─▶ queue ─▶ log (threads/<id>/events.jsonl) ─▶ reducers ─▶ ThreadState ─▶ strategy ─▶ context
                             ▲ compaction writes one BATCH_REPLACE event (a summary that records its parents)

* `memdir.threads.model` — chunk types, retention classes, `Chunk`, `ThreadState`.
* `memdir.threads.reducers` — the operations (ADD … BATCH) that turn events into state; replay.
* `memdir.threads.log` — the append-only, human-readable event log, safe across processes.
* `memdir.threads.compaction` — which chunks to compact, and the summary that replaces them.
* `memdir.threads.messages` — a message checked, with its defaults, before it is queued.
* `memdir.threads.queue` — the blocking event queue (COMPACTING, PAUSED, STEPPING).
* `memdir.threads.pending` — queued messages kept on disk until processed (``queue.jsonl``).
* `memdir.threads.manager` — execution modes, stepping, dispatch; the API the tools and the CLI use.
* `memdir.threads.markers` — ``@@memory('semantic')@@`` and ``@@ref('p3')@@`` in appended messages.
* `memdir.threads.context` — the strategies: virtual, fragment, semantic.
* `memdir.threads.vectors` — the thread's embeddings, cached under ``.memdir/threads/``.

Import from the submodules: this package imports nothing.
"""
