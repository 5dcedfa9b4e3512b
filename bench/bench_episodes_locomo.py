"""Episode-based recall vs plain turn entries on LoCoMo (turn-level evidence recall@k).

    python bench/bench_episodes_locomo.py [--data ../shared/data/locomo10.json] [--k 5 10]
                                          [--conversations N] [--tune]

Setup:

* Each LoCoMo conversation becomes one transcript (the plain JSON format of
  `memdir.episodes.ingest`): its sessions in order, every turn a message
  ``{role, name, id, content, timestamp}`` — role ``user`` for speaker A and
  ``assistant`` for speaker B, the speaker's name, the ``dia_id`` as id, the text (plus
  ``[shares a photo: caption]`` when the turn carries an image caption). A session's
  turns start at its ``session_N_date_time`` and are 30 seconds apart, so the days
  between sessions are pauses and the pause rule cuts every session; the tuned topic
  shift may cut a session further. The transcript is ingested with `memdir.episodes.ingest`
  into a fresh memory root with the real embedder (all-MiniLM-L6-v2, ONNX).
* Baseline: a second root with one entry per turn (``"<speaker>: <text>"``, as
  ``bench_recall_locomo.py`` stores them), searched with memdir's hybrid search.
* Questions: categories 1-4 with evidence (1,536); recall@k = share of a question's
  evidence turns among the first k turns returned, averaged over questions.

How an episode "retrieves" turns (the fair count): episode-based recall must also hand
back exactly k turns. Episodes are ranked by hybrid search over the episode entries
(``path_prefix=experience/episodes/``); the turns of the first episode come first, then
those of the second, and so on, and *within* an episode turns are ordered by the same
turn relevance the baseline uses (the hybrid score of that turn's entry for the
question; turns the turn search does not return keep their transcript order at the
end). The list is cut at k turns. So the rows differ only in what decides which
neighbourhood the turns come from: the episode ranking or none.

Rows:

* ``turns (hybrid)`` — the baseline.
* ``episodes → turns`` — the two-stage recall above, episodes by plain search score.
* ``episodes (seed ranking) → turns`` — episodes ranked by `memdir.episodes.recall.rank`
  (importance boost + recency decay, "now" = the end of the last session, no threshold,
  top 10), which favours the later sessions: LoCoMo asks about any time, so this shows
  the cost of the decay on a recall task.
* ``episodes (top 5) → rerank turns`` — retrieve-then-rerank: the turns of the first 5
  episodes form the pool, ranked by turn relevance alone, cut at k.
* ``whole episodes (info)`` — share of evidence turns inside the first k *episodes* (no
  turn cut: what an agent reading whole episodes would see, at ~10x the turns).

``--tune`` reproduces how the topic-shift threshold was chosen (see `memdir.episodes.segment`):
LoCoMo conversations with the timestamps removed, the session starts as the true
boundaries, F1 with ±2 turns tolerance, a grid over window, minimum episode length and
threshold fitted on conversations 1-5 and checked on 6-10.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from memdir.core.entry import EPISODES_PREFIX  # noqa: E402
from memdir.core.settings import Settings  # noqa: E402
from memdir.episodes.ingest import ingest  # noqa: E402
from memdir.episodes.model import Message  # noqa: E402
from memdir.episodes.recall import rank  # noqa: E402
from memdir.episodes.segment import SegmentConfig, segment  # noqa: E402
from memdir.episodes.store import read_episode  # noqa: E402
from memdir.memory import Memory  # noqa: E402

DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo10.json"
CATEGORIES = (1, 2, 3, 4)
TURN_SECONDS = 30
EPISODE_CANDIDATES = 10
POOL_EPISODES = 5
_DIA_ID = re.compile(r"D:?(\d+):(\d+)")


@dataclass
class Conversation:
    sample_id: str
    messages: list[dict]  # the transcript: {role, name, id, content, timestamp}
    session_starts: list[int]  # message index of each session's first turn
    questions: list[tuple[str, set[str], int]]


def parse_evidence(raw: list[str]) -> set[str]:
    """Evidence ids, repairing the data's slips ("D8:6; D9:17", "D:11:26", "D30:05"); unknown ids count as misses."""
    return {f"D{int(s)}:{int(n)}" for item in raw for s, n in _DIA_ID.findall(item)}


def session_time(text: str) -> datetime:
    """``1:56 pm on 8 May, 2023`` → an aware datetime."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load(path: Path) -> list[Conversation]:
    conversations = []
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        messages, starts, n = [], [], 1
        while f"session_{n}" in conv:
            turns = conv[f"session_{n}"]
            if turns:
                start = session_time(conv[f"session_{n}_date_time"])
                starts.append(len(messages))
                for i, turn in enumerate(turns):
                    text = turn["text"] + (f" [shares a photo: {turn['blip_caption']}]" if turn.get("blip_caption") else "")
                    messages.append({
                        "role": "user" if turn["speaker"] == conv["speaker_a"] else "assistant",
                        "name": turn["speaker"], "id": turn["dia_id"], "content": text,
                        "timestamp": (start + timedelta(seconds=TURN_SECONDS * i)).isoformat(),
                    })
            n += 1
        questions = [(q["question"], parse_evidence(q.get("evidence") or []), q["category"])
                     for q in sample["qa"] if q["category"] in CATEGORIES and q.get("evidence")]
        conversations.append(Conversation(sample["sample_id"], messages, starts, questions))
    return conversations


class CachingEmbedder:
    """Wraps an embedder with an in-process cache (turns are embedded by both stores and the topic windows)."""

    def __init__(self, inner) -> None:
        self.inner, self.cache = inner, {}
        self.model_id, self.dimensions, self.source = inner.model_id, inner.dimensions, inner.source

    def embed(self, texts):
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing)):
                self.cache[text] = vector
        if not texts:
            return np.zeros((0, self.dimensions), np.float32)
        return np.stack([self.cache[t] for t in texts]).astype(np.float32)


def load_model(settings: Settings):
    from memdir.embeddings import load_embedder

    try:
        return CachingEmbedder(load_embedder(model_dir=settings.embeddings.model_dir, cache_dir=settings.storage.cache_dir))
    except Exception as exc:  # no model: keyword-only, and the table says so
        print(f"(no embedding model: {exc}; keyword-only)", file=sys.stderr)
        return None


def turn_path(dia_id: str) -> str:
    session, number = dia_id.split(":")
    return f"turn/{session.lower()}/{int(number)}.md"


def recall_at(ranked: list[str], evidence: set[str], k: int) -> float:
    return len(evidence & set(ranked[:k])) / len(evidence)


def open_root(root: Path, embedder) -> Memory:
    settings = Settings(root=root, embeddings_enabled=embedder is not None)
    return Memory.open(settings, embedder=embedder) if embedder is not None else Memory.open(settings, load_model=False)


def run_conversation(conv: Conversation, workdir: Path, embedder, ks: list[int]) -> dict:
    """Scores per method for one conversation (lists of per-question recalls) plus episode statistics."""
    transcript = workdir / f"{conv.sample_id}.json"
    transcript.write_text(json.dumps({"session_id": conv.sample_id, "messages": conv.messages}), encoding="utf-8")
    episodes_memory = open_root(workdir / f"{conv.sample_id}-episodes", embedder)
    turns_memory = open_root(workdir / f"{conv.sample_id}-turns", embedder)
    started = time.perf_counter()
    report = ingest(episodes_memory, transcript)
    ingest_seconds = time.perf_counter() - started
    episode_turns = {path: [m.uid for m in episode.messages] for path, episode in report.episodes}
    boundaries = Counter(episode.boundary for _, episode in report.episodes)
    for message in conv.messages:
        turns_memory.write(turn_path(message["id"]), f"{message['name']}: {message['content']}",
                           metadata={"type": "fact"})
    path_to_id = {turn_path(m["id"]): m["id"] for m in conv.messages}
    stored = {path: read_episode(episodes_memory, path) for path in episode_turns}
    now = max(episode.when for episode in stored.values())
    settings = episodes_memory.settings
    scores: dict[str, list[float]] = {}
    top_k = max(ks)
    for question, evidence, _category in conv.questions:
        turn_hits = turns_memory.search(question, top_k=len(conv.messages), path_prefix="turn/")
        turn_ranked = [path_to_id[hit.path] for hit in turn_hits]
        turn_rank = {dia_id: n for n, dia_id in enumerate(turn_ranked)}
        episode_hits = episodes_memory.search(question, top_k=EPISODE_CANDIDATES, path_prefix=EPISODES_PREFIX)
        by_score = [hit.path for hit in episode_hits]
        seeded = [item.episode.path for item in rank([(stored[hit.path], float(hit.score)) for hit in episode_hits],
                                                     settings, now=now, threshold=0.0, limit=EPISODE_CANDIDATES)]

        def turns_of(episode_paths: list[str]) -> list[str]:
            out: list[str] = []
            for path in episode_paths:
                ids = episode_turns[path]
                out += sorted(ids, key=lambda i: (turn_rank.get(i, len(turn_rank)), ids.index(i)))  # noqa: B023 — called here
                if len(out) >= top_k:
                    break
            return out

        pool = {i for path in by_score[:POOL_EPISODES] for i in episode_turns[path]}
        reranked = [i for i in turn_ranked if i in pool] + sorted(pool - set(turn_ranked))
        ranked = {"turns (hybrid)": turn_ranked, "episodes → turns": turns_of(by_score),
                  f"episodes (top {POOL_EPISODES}) → rerank turns": reranked,
                  "episodes (seed ranking) → turns": turns_of(seeded)}
        for name, ids in ranked.items():
            for k in ks:
                scores.setdefault(f"{name}@{k}", []).append(recall_at(ids, evidence, k))
        for k in ks:
            inside = {i for path in by_score[:k] for i in episode_turns[path]}
            scores.setdefault(f"whole episodes (info: k episodes)@{k}", []).append(len(evidence & inside) / len(evidence))
    episodes_memory.close()
    turns_memory.close()
    return {"scores": scores, "episodes": len(report.episodes), "boundaries": boundaries,
            "turns": len(conv.messages), "ingest_seconds": ingest_seconds}


def tune(conversations: list[Conversation], embedder) -> None:
    """Grid search of the topic-shift settings on session boundaries (timestamps removed)."""
    data = []
    for conv in conversations:
        messages = [Message(role=m["role"], text=m["content"], speaker=m["name"], uid=m["id"]) for m in conv.messages]
        data.append((messages, conv.session_starts[1:]))
    half = len(data) // 2

    def score(pred: list[int], truth: list[int], tolerance: int = 2) -> tuple[int, int, int]:
        used, hits = set(), 0
        for position in truth:
            near = [p for p in pred if abs(p - position) <= tolerance and p not in used]
            if near:
                used.add(min(near, key=lambda p: abs(p - position)))
                hits += 1
        return hits, len(pred), len(truth)

    def prf(rows) -> tuple[float, float, float, int]:
        hits, predicted, true = (sum(column) for column in zip(*rows))
        precision = hits / predicted if predicted else 0.0
        recall = hits / true if true else 0.0
        return precision, recall, (2 * precision * recall / (precision + recall) if precision + recall else 0.0), predicted

    results = []
    for window in (2, 3, 4, 5):
        for minimum in (3, 6, 10):
            for threshold in np.round(np.arange(0.30, 0.91, 0.05), 2):
                config = SegmentConfig(topic_threshold=float(threshold), window=window, min_messages=minimum)
                rows = [score([s.start for s in segment(m, config, embedder)[1:]], truth) for m, truth in data]
                results.append((window, minimum, float(threshold), prf(rows[:half]), prf(rows[half:])))
    results.sort(key=lambda r: -r[3][2])
    print(f"Topic-shift tuning: fit on conversations 1-{half}, check on {half + 1}-{len(data)}; "
          f"{sum(len(t) for _, t in data)} true boundaries (session starts), ±2 turns")
    print(f"{'window':>6} {'min':>4} {'thr':>5} | {'fit P':>6} {'R':>5} {'F1':>5} {'n':>4} | {'check P':>7} {'R':>5} {'F1':>5} {'n':>4}")
    for window, minimum, threshold, fit, check in results[:10]:
        print(f"{window:>6} {minimum:>4} {threshold:>5.2f} | {fit[0]:>6.2f} {fit[1]:>5.2f} {fit[2]:>5.3f} {fit[3]:>4} | "
              f"{check[0]:>7.2f} {check[1]:>5.2f} {check[2]:>5.3f} {check[3]:>4}")
    for every in (15, 20, 25):
        rows = [score(list(range(every, len(m), every)), truth) for m, truth in data]
        fit, check = prf(rows[:half]), prf(rows[half:])
        print(f"baseline: a cut every {every} turns | fit F1 {fit[2]:.3f} | check F1 {check[2]:.3f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--k", type=int, nargs="+", default=[5, 10])
    parser.add_argument("--conversations", type=int, default=None, help="Only the first N conversations.")
    parser.add_argument("--tune", action="store_true", help="Grid-search the topic-shift settings instead.")
    parser.add_argument("--json", type=Path, default=None, help="Also write the mean recalls to this JSON file.")
    args = parser.parse_args(argv)
    conversations = load(args.data)[: args.conversations]
    embedder = load_model(Settings())
    if args.tune:
        if embedder is None:
            raise SystemExit("--tune needs the embedding model.")
        tune(conversations, embedder)
        return
    totals: dict[str, list[float]] = {}
    episodes = turns = 0
    boundaries: Counter[str] = Counter()
    seconds = []
    with tempfile.TemporaryDirectory(prefix="memdir-bench-episodes-") as tmp:
        for conv in conversations:
            result = run_conversation(conv, Path(tmp), embedder, args.k)
            for key, values in result["scores"].items():
                totals.setdefault(key, []).extend(values)
            episodes, turns = episodes + result["episodes"], turns + result["turns"]
            boundaries.update(result["boundaries"])
            seconds.append(result["ingest_seconds"])
            print(f"{conv.sample_id}: {result['turns']} turns → {result['episodes']} episodes, "
                  f"ingest {result['ingest_seconds']:.1f}s", file=sys.stderr)
    model = embedder.model_id if embedder else "none (keyword only)"
    questions = len(next(iter(totals.values())))
    print(f"\nLoCoMo turn-level evidence recall, categories 1-4, {questions} questions, "
          f"{len(conversations)} conversations; model: {model}")
    print(f"episodes: {episodes} from {turns} turns ({turns / max(episodes, 1):.1f} turns each); boundaries: "
          + ", ".join(f"{name} {count}" for name, count in boundaries.most_common())
          + f"; ingest median {statistics.median(seconds):.1f}s per conversation\n")
    means = {key: statistics.fmean(values) for key, values in totals.items()}
    if args.json:
        args.json.write_text(json.dumps({"questions": questions, "episodes": episodes, "turns": turns,
                                         "boundaries": dict(boundaries), "recall": means}, indent=2, ensure_ascii=False))
    names = list(dict.fromkeys(key.rsplit("@", 1)[0] for key in totals))
    header = f"{'method':<40}" + "".join(f"{f'R@{k}':>8}" for k in args.k)
    print(header)
    print("-" * len(header))
    for name in names:
        print(f"{name:<40}" + "".join(f"{means[f'{name}@{k}']:>8.3f}" for k in args.k))


if __name__ == "__main__":
    main()
