"""Deterministic heuristics: message importance, outcome, tags, name and summary of an episode.

Everything here is plain regular expressions over the messages, so the same transcript
always gives the same episodes (idempotent ingest depends on it) and nothing needs a
model. When the MCP client supports sampling, `memdir.episodes.sampling` may replace the
name and summary; outcome, tags and importance always come from here.

Importance signals (the max wins; episodes are boosted episodes at 0.7 and above):

=============================================================  =====
signal                                                         value
=============================================================  =====
"remember", "don't forget", "keep in mind", "from now on", …   0.9
a fix or root cause: "root cause", "the fix", "turns out", …   0.8
a user correction: "no, …", "that's wrong", "actually, …", …   0.8
a decision: "decided", "let's go with", "settled on", …        0.75
blocked: "blocked", "waiting on", "permission denied", …       0.7
an error: ``ValueError``, a traceback, a failed tool call, …   0.6
a plain user message / assistant message / tool output         0.3 / 0.2 / 0.1
=============================================================  =====

Outcome: an explicit ``OUTCOME: success|failure|blocked|ongoing`` line wins; otherwise
the last message (in the final third of the episode, at least its last 6 messages)
carrying a success, failure or blocked signal decides, and ``ongoing`` when none does.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import PurePosixPath

from memdir.core.signals import DECISION, DECISION_IMPORTANCE, REMEMBER, REMEMBER_IMPORTANCE
from memdir.episodes.model import OUTCOMES, Episode, Message, Outcome
from memdir.episodes.segment import hinted_tags, start_marker, without_markers

# ---------------------------------------------------------------- tags
_EXTENSIONS = (
    "py|pyi|ipynb|js|mjs|cjs|ts|tsx|jsx|json|jsonl|md|rst|txt|toml|yaml|yml|ini|cfg|conf|sh|bash|zsh|ps1|rs|go|"
    "java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|scala|sql|html|css|scss|vue|svelte|lock|tf|proto|xml|csv|env|gradle|"
    "dockerfile|mk|lua|r|jl|ex|exs|erl|dart|zig"
)
FILE_NAME = re.compile(
    rf"(?<![\w@/.-])(?:~?/)?(?:[\w.-]+/)*(?P<name>[\w][\w.-]*\.(?:{_EXTENSIONS}))(?![\w/-])(?!\.\w)", re.IGNORECASE
)
BARE_FILES = re.compile(r"\b(Dockerfile|Makefile|Justfile|Gemfile|Procfile|Rakefile|Jenkinsfile|CMakeLists\.txt)\b")
REPO = re.compile(r"\b(?:github|gitlab)\.com[/:](?P<repo>[\w.-]+/[\w.-]+?)(?:\.git)?(?=[/#?\s)\]'\"`,]|$)")
ERROR_TYPE = re.compile(r"\b[A-Z][A-Za-z0-9_]*(?:Error|Exception)\b")
ERRNO = re.compile(
    r"\bE(?:NOENT|ACCES|PERM|EXIST|NOTDIR|ISDIR|CONNREFUSED|CONNRESET|ADDRINUSE|ADDRNOTAVAIL|TIMEDOUT|PIPE|AGAIN|"
    r"NOSPC|MFILE|NOTEMPTY|HOSTUNREACH|NETUNREACH|INVAL|BUSY|ROFS|NOMEM|NOTFOUND|AI_AGAIN)\b"
)
_HTTP_REASONS = (
    "Bad Request|Unauthorized|Forbidden|Not Found|Method Not Allowed|Conflict|Gone|Unprocessable Entity|"
    "Too Many Requests|Internal Server Error|Bad Gateway|Service Unavailable|Gateway Timeout|Request Timeout"
)
HTTP_STATUS = re.compile(
    rf"\bHTTP(?:/\d(?:\.\d)?)?[ :]+(?P<a>[1-5]\d\d)\b|\b(?P<b>[45]\d\d)[ :]+(?:{_HTTP_REASONS})\b"
    r"|\bstatus(?:[ _]code)?[ :=]+(?P<c>[45]\d\d)\b",
    re.IGNORECASE,
)
COMMANDS = frozenset(
    """git gh pytest python python3 pip pip3 uv uvx poetry pipx tox nox ruff mypy black isort flake8 pylint
    npm npx yarn pnpm node bun deno jest vitest tsc eslint prettier webpack vite cargo rustc go make cmake
    docker docker-compose kubectl helm terraform ansible aws gcloud az curl wget ssh scp rsync psql mysql sqlite3
    redis-cli bundle rails rake rspec gradle mvn java dotnet swift brew apt apt-get systemctl journalctl
    memdir claude""".split()
)
_COMMAND_IN_TEXT = re.compile(r"(?:^|\n)\s*\$\s+(?P<a>[\w.-]+)|`(?P<b>[\w.-]+)[ `]")
# In prose ("I ran pytest", "then git push"): a command's name as a lowercase word of its own;
# names that are also everyday words count only after a verb of running ("ran make", "use poetry").
_WORD_IN_PROSE = re.compile(r"(?<![\w./-])[a-z][a-z0-9-]*(?![\w/-]|\.\w)")
_RUN_VERB = re.compile(r"\b(?:run|runs|ran|running|rerun|reran|tried|use|used|using|call|called|invoke|invoked|"
                       r"execute|executed|type|typed)\s+`?(?P<name>[a-z][a-z0-9-]*)\b", re.IGNORECASE)
_EVERYDAY_WORDS = frozenset("make go node bundle swift black bun jest poetry cargo helm rails rake claude java".split())
_SHELL_SPLIT = re.compile(r"&&|\|\||[;|\n]")
MAX_TAGS = 12

# ---------------------------------------------------------------- outcome and importance signals
OUTCOME_MARKER = re.compile(r"^[ \t>*_#-]*OUTCOME:[ \t]*(?P<outcome>success|failure|blocked|ongoing)\b",
                            re.IGNORECASE | re.MULTILINE)
_OUTCOME_OF: dict[str, Outcome] = {outcome: outcome for outcome in OUTCOMES}  # the marker's word, case folded
_SUCCESS_TEXT = re.compile(
    r"\ball (?:\d+ )?(?:the )?(?:tests?|checks?|specs?) (?:now )?(?:pass|passed|passing|are passing|green)\b|"
    r"\b(?:fixed|resolved|solved|works now|working now|now works|it works|that worked|all green|completed|"
    r"shipped|merged|deployed|successfully|succeeded|is done|are done|all done|done\.)|✅|✓",
    re.IGNORECASE,
)
_THANKS = re.compile(r"^\s*(?:thanks|thank you|thx|perfect|great|awesome|lgtm|looks good|nice)\b", re.IGNORECASE)
_FAILURE_TEXT = re.compile(
    r"\b(?:failed|fails|failing|broken|doesn'?t work|didn'?t work|does not work|did not work|still (?:fails|"
    r"failing|broken|errors?|crashes)|giving up|give up|couldn'?t|could not|unable to|no luck|crash(?:es|ed)?)\b|❌",
    re.IGNORECASE,
)
_BLOCKED_TEXT = re.compile(
    r"\bblocked\b|\bwaiting (?:on|for) (?:the |a |an )?(?:review|approval|access|credentials|reply|response|"
    r"decision|input|ci|deploy|merge|someone|them|him|her)\b|\b(?:need|needs|requires?) (?:access|permission|"
    r"approval|credentials|a token|an api key)\b|\bpermission denied\b|\bcan(?:'|no)t proceed\b|\bon hold\b",
    re.IGNORECASE,
)
_FAILURE_OUTPUT = re.compile(
    r"\b\d+ (?:failed|errors?)\b|\bFAILED\b|Traceback \(most recent call last\)|^(?:error|fatal)(?:\[\w+\])?:|"
    r"npm ERR!|\bBUILD FAILED\b|\bcommand not found\b|exit (?:code|status) [1-9]",
    re.MULTILINE,
)
_SUCCESS_OUTPUT = re.compile(r"\b\d+ passed\b|\bBUILD SUCCESSFUL\b|^OK\b|\b0 errors\b", re.MULTILINE)

_FIX = re.compile(
    r"\b(?:root cause|the fix (?:is|was)|fixed (?:it )?by|solved (?:it )?by|the (?:problem|issue|bug) (?:is|was)|"
    r"turns out|turned out|workaround|the trick is|the solution (?:is|was))\b",
    re.IGNORECASE,
)
_CORRECTION = re.compile(
    r"^\s*(?:no[,.!]|nope\b|wrong\b|that'?s (?:not|wrong|incorrect)|this is wrong|not what i|actually[, ]|"
    r"instead[, ]|don'?t do|please don'?t|stop\b|why did you|you (?:broke|forgot|missed|deleted)|undo|revert)",
    re.IGNORECASE,
)
_ERROR = re.compile(r"Traceback \(most recent call last\)|\b[A-Z][A-Za-z0-9_]*(?:Error|Exception)\b|\berror:",
                    re.IGNORECASE)

BASE_IMPORTANCE = {"user": 0.3, "assistant": 0.2, "tool": 0.1, "system": 0.1}
_GREETING = re.compile(r"^(?:hi|hey|hello|yo|good (?:morning|afternoon|evening)|good to see you|great to see you|"
                       r"long time no see|how are you|how have you been|how's it going|what's up|thanks|thank you|"
                       r"ok|okay|great|sure|cool|wow|nice|hmm|yes|yeah|no worries)\b", re.IGNORECASE)
_CONTENT_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def message_importance(message: Message) -> float:
    """Importance 0-1 of one message from its signals (see the module docstring's table)."""
    text = message.text
    base = BASE_IMPORTANCE.get(message.role, 0.2)
    score = base
    if message.kind == "tool_result":
        if message.is_error or _FAILURE_OUTPUT.search(text):
            score = max(score, 0.6)
        return score
    if message.kind == "tool_use":
        return score
    if REMEMBER.search(text):
        score = max(score, REMEMBER_IMPORTANCE)
    if _FIX.search(text):
        score = max(score, 0.8)
    if message.role == "user" and _CORRECTION.search(text):
        score = max(score, 0.8)
    if DECISION.search(text):
        score = max(score, DECISION_IMPORTANCE)
    if _BLOCKED_TEXT.search(text):
        score = max(score, 0.7)
    if _ERROR.search(text):
        score = max(score, 0.6)
    return score


def score_messages(messages: Iterable[Message]) -> None:
    """Set each message's ``importance`` in place."""
    for message in messages:
        message.importance = message_importance(message)


def message_signal(message: Message) -> Outcome | None:
    """The outcome a single message points to, or None."""
    text = message.text
    if message.kind == "tool_use":
        return None
    if message.kind == "tool_result" or message.role == "tool":
        if message.is_error or _FAILURE_OUTPUT.search(text):
            return "failure"
        return "success" if _SUCCESS_OUTPUT.search(text) else None
    explicit = OUTCOME_MARKER.search(text)
    if explicit:
        return _OUTCOME_OF[explicit.group("outcome").casefold()]
    if _BLOCKED_TEXT.search(text):
        return "blocked"
    # People narrate "fixed the failing test": in prose, success wins over failure words.
    if _SUCCESS_TEXT.search(text) or (message.role == "user" and _THANKS.search(text)):
        return "success"
    if _FAILURE_TEXT.search(text):
        return "failure"
    return None


def classify_outcome(messages: Sequence[Message]) -> Outcome:
    """success | failure | blocked | ongoing, from the episode's last signals (see the module docstring)."""
    for message in reversed(messages):
        explicit = OUTCOME_MARKER.search(message.text) if message.conversational else None
        if explicit:
            return _OUTCOME_OF[explicit.group("outcome").casefold()]
    tail = max(6, len(messages) // 3)
    for message in reversed(messages[-tail:]):
        signal = message_signal(message)
        if signal is not None:
            return signal
    return "ongoing"


def _add(counter: Counter[str], order: dict[str, tuple[int, str]], tag: str) -> None:
    """Count a tag case-insensitively; the first spelling seen is the one shown."""
    tag = tag.strip().strip(".,;:'\"`()[]")
    if not tag or len(tag) > 60:
        return
    key = tag.casefold()
    counter[key] += 1
    order.setdefault(key, (len(order), tag))


def _commands(command_line: str) -> Iterable[str]:
    for part in _SHELL_SPLIT.split(command_line):
        words = part.strip().split()
        while words and ("=" in words[0] or words[0] in ("sudo", "env", "time", "exec", "nohup", "(")):
            words = words[1:]
        if words:
            name = PurePosixPath(words[0]).name
            if name in COMMANDS:
                yield name


def _commands_in_prose(text: str) -> list[str]:
    """Commands named in what someone said, typed (``$ git``, `` `git` ``) or in prose; each once."""
    typed = [found.group("a") or found.group("b") for found in _COMMAND_IN_TEXT.finditer(text)]
    said = [word for word in _WORD_IN_PROSE.findall(text) if word not in _EVERYDAY_WORDS]
    after_a_verb = [found.group("name").lower() for found in _RUN_VERB.finditer(text)]
    return [name for name in dict.fromkeys(typed + said + after_a_verb) if name in COMMANDS]


def extract_tags(messages: Sequence[Message], project: str | None = None, limit: int = MAX_TAGS) -> list[str]:
    """Tags for an episode: project, the tags its ``TAGS:`` markers hint, then repos, file names,
    error types, errno codes, HTTP codes, commands.

    File names and commands are read from what people said and from tool calls (a file's
    *content* read by a tool would drown the list in its imports); error types, errno and
    HTTP codes also from tool output. Most frequent first, at most ``limit``. Marker lines
    are read for what they hint, never for words (``memdir:episode`` names no command).
    """
    counter: Counter[str] = Counter()
    order: dict[str, tuple[int, str]] = {}
    hinted: list[str] = []
    for message in messages:
        is_output = message.kind == "tool_result" or message.role == "tool"
        if not is_output:
            hinted += hinted_tags(message.text)
        text = without_markers(message.text)
        for found in ERROR_TYPE.finditer(text):
            _add(counter, order, found.group(0))
        for found in ERRNO.finditer(text):
            _add(counter, order, found.group(0))
        for found in HTTP_STATUS.finditer(text):
            _add(counter, order, f"HTTP {found.group('a') or found.group('b') or found.group('c')}")
        for found in REPO.finditer(text):
            _add(counter, order, found.group("repo"))
        if is_output:
            continue
        for found in FILE_NAME.finditer(text):
            _add(counter, order, found.group("name"))
        for found in BARE_FILES.finditer(text):
            _add(counter, order, found.group(1))
        if message.kind == "tool_use":
            if (message.tool or "").split("__")[-1] in ("Bash", "bash", "shell", "run_command", "WorkspaceBash"):
                for name in _commands(text.split(":", 1)[-1]):
                    _add(counter, order, name)
        else:
            for name in _commands_in_prose(text):
                _add(counter, order, name)
    ranked = sorted(counter, key=lambda key: (-counter[key], order[key][0]))
    tags = [project] if project else []
    for tag in hinted:
        if tag.casefold() not in {t.casefold() for t in tags}:
            tags.append(tag)
    for key in ranked:
        if key not in {t.casefold() for t in tags}:
            tags.append(order[key][1])
    return tags[:limit]


# ---------------------------------------------------------------- name and summary
def sentences(text: str) -> list[str]:
    """Non-empty sentences (and lines) of ``text``, whitespace collapsed."""
    return [" ".join(part.split()) for part in _SENTENCE.split(text) if part and part.strip()]


def clip_words(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` words (an ellipsis marks a cut)."""
    words = text.split()
    return " ".join(words) if len(words) <= limit else " ".join(words[:limit]) + " …"


def quoted_text(message: Message) -> str:
    """What a message says, as an episode quotes it: its text without segmentation markers."""
    return without_markers(message.text).strip()


def _requests(messages: Sequence[Message]) -> list[Message]:
    said = [m for m in messages if m.conversational and quoted_text(m)]
    users = [m for m in said if m.role == "user"]
    return users or said


def episode_name(messages: Sequence[Message], marker_name: str | None = None, max_words: int = 10) -> str:
    """A short task name: a marker's name, else the first substantive sentence someone asked."""
    if marker_name:
        return clip_words(marker_name, max_words)
    for message in messages:
        name = start_marker(message)
        if name:
            return clip_words(name, max_words)
    for _, sentence in _substantive(_requests(messages)[:4]):
        return clip_words(sentence.rstrip(".!?:"), max_words)
    requests = _requests(messages)
    return clip_words(requests[0].text.strip(), max_words) if requests else "Untitled episode"


def key_messages(messages: Sequence[Message], limit: int = 6) -> list[Message]:
    """The most important conversational messages (and errors), in order: what the entry quotes."""
    candidates = [(n, m) for n, m in enumerate(messages)
                  if quoted_text(m) and (m.conversational or m.importance >= 0.6)]
    ranked = sorted(candidates, key=lambda item: (-item[1].importance, -len(set(item[1].text.lower().split())), item[0]))
    chosen = sorted(ranked[:limit], key=lambda item: item[0])
    return [message for _, message in chosen]


def _substantive(messages: Sequence[Message]) -> Iterable[tuple[Message, str]]:
    """(message, sentence) pairs worth quoting: at least 3 words and not small talk."""
    for message in messages:
        for sentence in sentences(quoted_text(message)):
            cleaned = sentence.strip(" #>*-`")
            if len(cleaned.split()) >= 3 and not (_GREETING.match(cleaned) and len(cleaned.split()) <= 6):
                yield message, cleaned


def _informative(messages: Sequence[Message], skip: set[str], count: int) -> list[str]:
    """The ``count`` sentences with the most distinct content words, in conversation order."""
    candidates = [(n, sentence) for n, (_, sentence) in enumerate(_substantive(messages)) if sentence not in skip]
    ranked = sorted(candidates, key=lambda item: (-len({w.lower() for w in _CONTENT_WORD.findall(item[1])}), item[0]))
    return [sentence for _, sentence in sorted(ranked[:count])]


def summarize(episode: Episode, max_words: int = 70) -> str:
    """A one-paragraph deterministic summary: the request, what mattered, how it ended.

    The paragraph is what the entry's embedding reads (with the title and tags), so it
    names the request, then the important messages (fixes, decisions, corrections) or,
    in a conversation without any, its most informative sentences, then errors, the last
    word and the outcome.
    """
    said = [m for m in episode.messages if m.conversational and quoted_text(m)]
    requests = _requests(episode.messages)
    parts: list[str] = []
    used: set[str] = set()
    first = next(iter(_substantive(requests[:4])), None)
    if first is not None:
        parts.append(f"{first[0].who.capitalize()}: {clip_words(first[1], 30)}")
        used.add(first[1])
    notable = [sentences(quoted_text(m))[0] for m in said if m.importance >= 0.7]
    notable = [sentence for sentence in notable if sentence not in used][:2]
    for sentence in notable or _informative(said, used, 2):
        parts.append(clip_words(sentence, 20))
        used.add(sentence)
    errors = [tag for tag in episode.tags if ERROR_TYPE.fullmatch(tag) or ERRNO.fullmatch(tag) or tag.startswith("HTTP ")]
    if errors:
        parts.append("Errors: " + ", ".join(errors[:4]))
    if len(said) > 1 and said[-1] is not (first[0] if first else None):
        last = next((sentence for _, sentence in _substantive([said[-1]])), sentences(quoted_text(said[-1]))[0])
        if last not in used:
            parts.append(f"Last ({said[-1].who}): {clip_words(last, 20)}")
    parts.append(f"Outcome: {episode.outcome}.")
    text = " ".join(part if part.endswith((".", "!", "?", "…")) else part + "." for part in parts)
    return clip_words(text, max_words)


def describe(episode: Episode, marker_name: str | None = None) -> Episode:
    """Fill in an episode's importance, tags, outcome, name and summary (in place; returns it)."""
    score_messages(episode.messages)
    episode.importance = max((m.importance for m in episode.messages), default=0.0)
    episode.tags = extract_tags(episode.messages, episode.project)
    episode.outcome = classify_outcome(episode.messages)
    episode.name = episode_name(episode.messages, marker_name)
    episode.summary = summarize(episode)
    return episode


__all__ = [
    "classify_outcome",
    "clip_words",
    "describe",
    "episode_name",
    "extract_tags",
    "key_messages",
    "message_importance",
    "message_signal",
    "quoted_text",
    "score_messages",
    "sentences",
    "summarize",
]
