"""Per-message discovery: how often the reminder holds the answer, and how often it speaks out of turn.

    python bench/bench_discovery.py [--questions 40] [--set name=value ...]

`memdir.tools.discovery.discover` (what the ``memdir discover`` hook and MemoryDiscover run)
answers each message against stores written with `Memory.write`, one entry per turn or
note, as a user's agent writes them (`corpora.write_store`):

* LoCoMo questions (categories 1-4 with evidence, the first ``--questions`` of each
  conversation) against their own conversation's store, each turn one entry
  (``"<speaker>: <text>"``): the share whose reminder names an evidence turn (target >= 0.60);
* the same questions against the next conversation's store: the share that get any reminder;
* the same questions against four stores of unrelated domains (a payments team's notes, a
  biology lab's protocols, a company's bookkeeping notes, `bench/stores.py`; the Python
  documentation, `corpora.docs_corpus`): the share that get any reminder (target <= 0.02);
* developer prompts that name people and products the payments store has never seen
  (`stores.DEV_PROMPTS`): how many get a reminder, and how many of those name an entry
  that answers the prompt;
* short messages and pleasantries ("thanks!", "hello test"): how many get a reminder on
  any store (target: none).

Every figure is printed for the half of the data the defaults were tuned on (LoCoMo
conversations 1-5, `stores.TUNING_PROMPTS`) and for the half they were checked on
(conversations 6-10, `stores.CHECK_PROMPTS`); the LoCoMo figures also for two more sets of
conversations 6-10, looked at only to report them: the next ``--questions`` questions (kept
aside) and all the questions after those (fresh). The checked and kept-aside sets have been
seen (their figures reported) while defaults changed, so the fresh set is the one no choice
has looked at. With the evidence, the mean size in bytes of the reminders the own store gives.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench_recall_locomo import parse_overrides
from corpora import DEFAULT_LOCOMO, docs_corpus, locomo_corpora, real_embedder, write_store
from stores import CHECK_PROMPTS, STORES, TUNING_PROMPTS, store_docs

from memdir.core.settings import Settings
from memdir.tools.discovery import discover

SHORT_MESSAGES = ["thanks!", "hello test", "ok", "great, thanks", "lgtm", "sounds good", "yes please", "hi there",
                  "good morning", "cool", "thank you so much", "perfect", "nice work", "go ahead"]


def share(count: int, total: int) -> str:
    return f"{count / total:6.1%} ({count}/{total})" if total else "   n/a"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_LOCOMO)
    parser.add_argument("--recipe", choices=["plain", "conversation"], default="plain",
                        help="plain: one turn per entry, as an agent writes it (default); "
                             "conversation: the previous turn pasted into each entry")
    parser.add_argument("--questions", type=int, default=40, help="questions per conversation")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "memdir-bench-cache")
    args = parser.parse_args(argv)

    settings = Settings(**parse_overrides(args.overrides))
    conversations = locomo_corpora(args.data, args.recipe)
    docs = docs_corpus()
    locomo_embedder = real_embedder(args.cache, "locomo")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="memdir-discovery-") as tmp:
        stores = [write_store(Path(tmp) / c.name, c.docs, settings, locomo_embedder) for c in conversations]
        stores_embedder = real_embedder(args.cache, "stores")
        unrelated = {name: write_store(Path(tmp) / name, store_docs(name), settings, stores_embedder) for name in STORES}
        unrelated[docs.name] = write_store(Path(tmp) / "docs", docs.docs, settings, real_embedder(args.cache, "docs"))
        built = time.perf_counter() - started
        tuned, checked = range(0, len(conversations) // 2), range(len(conversations) // 2, len(conversations))
        first_questions, next_questions = slice(0, args.questions), slice(args.questions, 2 * args.questions)
        halves = {"tuned on": (tuned, first_questions), "checked on: seen": (checked, first_questions),
                  "kept aside: seen": (checked, next_questions), "fresh": (checked, slice(2 * args.questions, None))}
        print(f"discovery, '{args.recipe}' entries; setup {built:.0f} s; thresholds {settings.discovery.threshold} / "
              f"short {settings.discovery.threshold_short} (< {settings.discovery.adaptive_word_cutoff} words), "
              f"floor {settings.discovery.min_score}")
        for half, (numbers, questions) in halves.items():
            messages = evidence = own = other = size = 0
            domain = dict.fromkeys(unrelated, 0)
            for number in numbers:
                corpus = conversations[number]
                for query in corpus.queries[questions]:
                    messages += 1
                    reminder = discover(stores[number], query.text, settings)
                    own += bool(reminder)
                    size += len(reminder.encode())
                    evidence += any(f"`{path}`" in reminder for path in query.wanted)
                    other += bool(discover(stores[(number + 1) % len(stores)], query.text, settings))
                    for name, memory in unrelated.items():
                        domain[name] += bool(discover(memory, query.text, settings))
            first, last = numbers[0] + 1, numbers[-1] + 1
            asked = f"{questions.start + 1}-{questions.stop}" if questions.stop else f"{questions.start + 1} onwards"
            print(f"LoCoMo conversations {first}-{last} ({half}), questions {asked} of each, {messages} in all:")
            print(f"  own store: evidence in the reminder   {share(evidence, messages)}   any reminder {own / messages:.1%}"
                  f"   mean reminder {size / max(own, 1):.0f} bytes")
            print(f"  another conversation's store: any reminder  {share(other, messages)}")
            for name, count in domain.items():
                print(f"  unrelated store {name} ({len(unrelated[name].list(include_virtual=False))} entries): "
                      f"any reminder  {share(count, messages)}")
        payments = unrelated["payments"]
        for half, prompts in (("tuned on", TUNING_PROMPTS), ("checked on", CHECK_PROMPTS)):
            shown = right = answerable = answered = 0
            for text, wanted in prompts:
                reminder = discover(payments, text, settings)
                hit = any(f"`{path}`" in reminder for path in wanted)
                shown += bool(reminder)
                right += bool(reminder) and hit
                answerable += bool(wanted)
                answered += hit
            print(f"developer prompts with new names, payments store ({half}), {len(prompts)} prompts "
                  f"({answerable} with an answering entry):")
            print(f"  got a reminder {share(shown, len(prompts))}, of those right {share(right, shown)}, "
                  f"answerable prompts answered {share(answered, answerable)}")
        short = sum(bool(discover(memory, text, settings)) for memory in [*stores, *unrelated.values()]
                    for text in SHORT_MESSAGES)
        print(f"short messages and pleasantries ({len(SHORT_MESSAGES)} on {len(stores) + len(unrelated)} stores): "
              f"reminders {short}")
        for memory in [*stores, *unrelated.values()]:
            memory.close()


if __name__ == "__main__":
    main()
