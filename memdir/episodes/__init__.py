"""Episodic memory: conversations cut into task episodes, stored as entries.

    transcript ──ingest──▶ messages ──segment──▶ episodes ──heuristics──▶ described ──store──▶ experience/episodes/…
                                                                                     recall ◀── search / list

* `memdir.episodes.model` — `Message`, `Episode`.
* `memdir.episodes.segment` — boundaries: pauses, markers, topic shift.
* `memdir.episodes.heuristics` — importance, outcome, tags, name, summary (deterministic).
* `memdir.episodes.store` — the entry layout, idempotent save, listing.
* `memdir.episodes.ingest` — Claude Code JSONL and plain JSON transcripts.
* `memdir.episodes.recall` — discovery ranking (boost, decay, at most N) and the session-start reminder.
* `memdir.episodes.sampling` — an optional better name+summary from the client's model.

Import from the submodules: this package imports nothing, so the server's start-up and the
hooks load only the parts they use.
"""
