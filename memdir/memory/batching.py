"""Writes that arrive together share one model call: the texts of every write waiting for the model are
embedded in one batch.

A server runs several writes beside each other (one per client session), and each embeds its text
before it takes the store's lock. Run one by one, those model calls compete for the same cores, and
each pays the model's fixed cost per call; run as one batch, they share it. There
is no timer: a write that finds fewer than ``at_once`` batches running embeds its text at once;
writes arriving while that many run wait for one to end, and the first of them then embeds all
their texts together (group commit, as databases flush their logs). Two batches at once (the
default) keep both cores of a small machine busy: one model call alone leaves them idle between
its operators and while its caller tokenises and pools, and a write arriving during a long batch
no longer waits for all of it. The end of a batch wakes its own callers and the one that runs the
next batch, no other: many writes waiting cost no crowd of wake-ups.

A batch that starts beside another runs on a thread the system schedules after the server's other
threads (a higher nice value, on Linux): it takes a core only when nothing else wants it, so a read,
or a search's query embedding, is not kept waiting behind two batches. The first batch runs on its
caller's thread, as a lone write's model call would, with the model's threads as configured (one per
core by default: a lone call is faster with them, and the model's own worker threads keep the
default priority).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from memdir.embeddings.base import Embedder

log = logging.getLogger(__name__)

BATCH_NICENESS = 10
"""How far below the server's other threads a batch's thread is scheduled (a nice value: under full
load, such a thread gets about a tenth of a core's time beside one at the default priority)."""


def _yield_to_others() -> None:
    """Schedule the calling thread after the process's other threads (Linux: a nice value is a
    thread's own; elsewhere it would be the whole process's, so nothing changes)."""
    if sys.platform.startswith("linux"):
        try:
            thread = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + BATCH_NICENESS))
        except OSError:  # (not allowed here: the batch runs at the default priority)
            log.debug("the embedding batches' thread keeps the default priority", exc_info=True)


@dataclass(eq=False)
class _Waiting:
    """One caller's texts and model, and, once its batch has run, their vectors (None: the batch failed)
    or, for a batch of this caller alone, the model's error."""

    embedder: Embedder
    texts: Sequence[str]
    vectors: np.ndarray | None = None
    error: Exception | None = None
    batch: list[_Waiting] | None = None
    """The batch this caller is to run (itself among them), handed over with the model's turn; None for
    a caller taken into another's batch."""
    beside: bool = False
    """Whether that batch runs beside another's turn (below the server's other threads)."""
    turn: threading.Event = field(default_factory=threading.Event)
    """Set when its batch has run, or when it is to run the next batch."""


class EmbeddingBatches:
    """Embeds the texts of callers waiting at the same time in one model call."""

    def __init__(self, at_once: int = 1) -> None:
        """``at_once``: how many batches may run at the same time (at least one)."""
        self._guard = threading.Lock()
        self._waiting: list[_Waiting] = []
        self._at_once = max(1, at_once)
        self._running = 0
        self._first_running = False  # (the turn whose batches run on their callers' threads)
        self._beside = ThreadPoolExecutor(self._at_once, thread_name_prefix="memdir-embedding", initializer=_yield_to_others)

    def embed(self, embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
        """``texts``' vectors, made in one model call with the texts of every caller waiting meanwhile
        (for the same model).

        Raises:
            What ``embedder.embed`` raises for these texts. A batch of several callers that fails is
            embedded again caller by caller, so one caller's bad text never costs the others their
            vectors; a caller that was alone in its batch gets that batch's error (no second call).
        """
        mine = _Waiting(embedder, texts)
        with self._guard:
            self._waiting.append(mine)
            if self._running < self._at_once:
                self._running += 1
                mine.batch, mine.beside = self._take(embedder), self._first_running
                self._first_running = True
        if mine.batch is None:
            mine.turn.wait()
        if mine.batch is not None and mine.beside:  # the model is this caller's, beside another batch
            self._beside.submit(self._run, embedder, mine.batch, beside=True).result()
        elif mine.batch is not None:  # the model is this caller's, the first turn
            self._run(embedder, mine.batch, beside=False)
        if mine.error is not None:
            raise mine.error
        if mine.vectors is None:  # its batch of several failed: alone, with its own error if the error was its own
            return embedder.embed(texts)
        return mine.vectors

    def _take(self, embedder: Embedder) -> list[_Waiting]:
        """Every caller waiting for ``embedder``, taken off the queue as one batch (under the guard: a
        caller is taken into exactly one batch, when that batch is given its turn)."""
        batch = [waiting for waiting in self._waiting if waiting.embedder is embedder]
        self._waiting = [waiting for waiting in self._waiting if waiting.embedder is not embedder]
        return batch

    def _run(self, embedder: Embedder, batch: list[_Waiting], *, beside: bool) -> None:
        """Embed ``batch``'s texts in one call and hand each caller its rows; then hand the model to the
        first caller waiting, if any (it takes this batch's turn, ``beside`` another or not)."""
        try:
            vectors = embedder.embed([text for waiting in batch for text in waiting.texts])
        except Exception as exc:
            if len(batch) == 1:
                batch[0].error = exc
            else:
                log.warning("embedding %d writes together failed; each is embedded alone", len(batch), exc_info=True)
        else:
            start = 0
            for waiting in batch:
                waiting.vectors = vectors[start : start + len(waiting.texts)]
                start += len(waiting.texts)
        finally:
            with self._guard:
                following = self._waiting[0] if self._waiting else None
                if following is None:
                    self._running -= 1
                    self._first_running = self._first_running and beside
                else:
                    following.batch, following.beside = self._take(following.embedder), beside
            if following is not None:  # (first: the next call starts while this one's callers go on)
                following.turn.set()
            for waiting in batch:
                waiting.turn.set()


__all__ = ["EmbeddingBatches"]
