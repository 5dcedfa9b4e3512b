"""Which tools each memory mode offers, and how each tool is presented to clients.

SwarmMemory's three modes, with the discovery tool added to all of them:

* ``retrieval`` — read-only Q&A: MemoryRead, MemoryGlob, MemoryGrep, ThreadList (no LoadSkill);
  memdir adds MemorySearch (ranked hybrid search) and MemoryGraph (an entry's links) to it and
  so to every mode;
* ``assistant`` (default) — learning and retrieval: + MemoryWrite, MemoryEdit, MemoryLink,
  MemoryUnlink, the thread
  tools (ThreadAppend, ThreadContext, ThreadControl), LoadSkill;
* ``researcher`` — knowledge extraction: every memory tool (+ MemoryDelete, MemoryDefrag
  and the episode tools when installed) + LoadSkill.

Every tool carries a title and accurate annotations (tests/server/test_modes.py freezes
them). The workspace tools (Read, Write, Edit, Glob, Grep, Bash) are not part of a mode:
they are offered in every mode that has LoadSkill, hidden until a loaded skill lists them.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_types import ToolAnnotations

from memdir.core.sections import Mode


@dataclass(frozen=True)
class ToolSpec:
    """How one tool is registered: its name, title, annotations and (for memory tools) its function.

    Attributes:
        target: ``"module:function"`` of the plain tool function in ``memdir.tools``
            (imported when the server is built); empty for tools wired by hand.
        optional: the tool is skipped when its module is not installed (yet).
    """

    name: str
    title: str
    annotations: ToolAnnotations
    target: str = ""
    optional: bool = False


def _hints(*, read_only: bool, destructive: bool = False, idempotent: bool, open_world: bool = False) -> ToolAnnotations:
    return ToolAnnotations(
        read_only_hint=read_only,
        destructive_hint=False if read_only else destructive,
        idempotent_hint=idempotent,
        open_world_hint=open_world,
    )


_READ = _hints(read_only=True, idempotent=True)

TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec("MemoryRead", "Read memory entry", _READ, "memdir.tools.memory_read:memory_read"),
        ToolSpec("MemoryGlob", "Find memory entries by path", _READ, "memdir.tools.memory_glob:memory_glob"),
        ToolSpec("MemoryGrep", "Search memory contents", _READ, "memdir.tools.memory_grep:memory_grep"),
        ToolSpec("MemorySearch", "Search memory by meaning and keywords", _READ, "memdir.tools.memory_search:memory_search"),
        ToolSpec("MemoryDiscover", "Discover relevant skills and memories", _READ),
        ToolSpec("MemoryGraph", "Show linked memory entries", _READ, "memdir.tools.memory_graph:memory_graph"),
        ToolSpec(
            "MemoryWrite", "Write memory entry",
            _hints(read_only=False, destructive=True, idempotent=True),  # may replace the entry at that path
            "memdir.tools.memory_write:memory_write",
        ),
        ToolSpec(
            "MemoryEdit", "Edit memory entry",
            _hints(read_only=False, destructive=True, idempotent=False),
            "memdir.tools.memory_edit:memory_edit",
        ),
        ToolSpec(
            "MemoryLink", "Link memory entries",
            _hints(read_only=False, destructive=False, idempotent=True),  # the same link again replaces it
            "memdir.tools.memory_link:memory_link",
        ),
        ToolSpec(
            "MemoryUnlink", "Unlink memory entries",
            _hints(read_only=False, destructive=True, idempotent=False),  # a second call finds no link: an error
            "memdir.tools.memory_link:memory_unlink",
        ),
        ToolSpec(
            "MemoryDelete", "Delete memory entry",
            _hints(read_only=False, destructive=True, idempotent=True),
            "memdir.tools.memory_delete:memory_delete",
        ),
        ToolSpec(
            "MemoryDefrag", "Analyze and optimize memory",
            _hints(read_only=False, destructive=True, idempotent=False),  # analyze/find_* read; the rest change
            "memdir.tools.memory_defrag:memory_defrag", optional=True,
        ),
        ToolSpec(
            "EpisodeRecord", "Record an episode",
            _hints(read_only=False, destructive=False, idempotent=False),
            "memdir.tools.episode_record:episode_record", optional=True,
        ),
        ToolSpec("EpisodeList", "List recent episodes", _READ, "memdir.tools.episode_list:episode_list", optional=True),
        ToolSpec(
            "ThreadAppend", "Append to a working-memory thread",
            _hints(read_only=False, destructive=False, idempotent=False),
            "memdir.tools.thread_append:thread_append",
        ),
        ToolSpec("ThreadContext", "Assemble a thread's context", _READ, "memdir.tools.thread_context:thread_context"),
        ToolSpec(
            "ThreadControl", "Control a working-memory thread",
            _hints(read_only=False, destructive=True, idempotent=False),  # compact replaces chunks by a summary
            "memdir.tools.thread_control:thread_control",
        ),
        ToolSpec("ThreadList", "List working-memory threads", _READ, "memdir.tools.thread_list:thread_list"),
        ToolSpec("LoadSkill", "Load skill", _hints(read_only=False, destructive=False, idempotent=True)),
    )
}

WORKSPACE_SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec("Read", "Read workspace file", _READ),
        ToolSpec("Write", "Write workspace file", _hints(read_only=False, destructive=True, idempotent=True)),
        ToolSpec("Edit", "Edit workspace file", _hints(read_only=False, destructive=True, idempotent=False)),
        ToolSpec("Glob", "Find workspace files", _READ),
        ToolSpec("Grep", "Search workspace files", _READ),
        ToolSpec("Bash", "Run shell command", _hints(read_only=False, destructive=True, idempotent=False, open_world=True)),
    )
}

_THREADS = ("ThreadAppend", "ThreadContext", "ThreadControl", "ThreadList")
_RETRIEVAL = ("MemoryRead", "MemoryGlob", "MemoryGrep", "MemorySearch", "MemoryDiscover", "MemoryGraph", "ThreadList")
_ASSISTANT = (*_RETRIEVAL[:-1], "MemoryWrite", "MemoryEdit", "MemoryLink", "MemoryUnlink", *_THREADS, "LoadSkill")
_RESEARCHER = (*_ASSISTANT[:-1], "MemoryDelete", "MemoryDefrag", "EpisodeRecord", "EpisodeList", "LoadSkill")

MODE_TOOLS: dict[str, tuple[str, ...]] = {
    "retrieval": _RETRIEVAL,
    "assistant": _ASSISTANT,
    "researcher": _RESEARCHER,
}
"""The memory tools of each mode, in the order clients list them (optional ones when installed)."""

MODES: tuple[str, ...] = tuple(MODE_TOOLS)


@dataclass(frozen=True)
class ToolDoc:
    """A tool function's docstring split for MCP: the description and each parameter's text."""

    description: str
    params: dict[str, str] = field(default_factory=dict)


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises.*|Yields|Examples?|Note)s?:\s*$")
_ARG = re.compile(r"^(\*{0,2}\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


def parse_docstring(fn: Callable[..., Any]) -> ToolDoc:
    """Split a Google-style docstring written for the model into description and parameter texts.

    The description keeps the summary and the body, each paragraph on one line (the
    source's line breaks and indentation are no text for the model, and every character
    is sent with every request); ``Args:`` become the parameters' descriptions;
    ``Returns:`` and ``Raises:`` are left out (a result and an error speak for
    themselves). RST double backticks become markdown ones.
    """
    text = inspect.cleandoc(fn.__doc__ or "").replace("``", "`")
    description: list[str] = []
    params: dict[str, list[str]] = {}
    section = ""
    current = ""
    for line in text.splitlines():
        header = _SECTION.match(line.strip()) if not line.startswith(" ") else None
        if header:
            section = header.group(1)
            continue
        if section in ("Args", "Arguments", "Parameters"):
            stripped = line.strip()
            match = _ARG.match(stripped) if line.startswith("    ") and not line.startswith("     ") else None
            if match:
                current = match.group(1).lstrip("*")
                params[current] = [match.group(2)]
            elif stripped and current:
                params[current].append(stripped)
            continue
        if section:  # Returns, Raises, Examples, Note
            continue
        description.append(line)
    return ToolDoc(
        description=unwrap("\n".join(description)),
        params={name: " ".join(parts).strip() for name, parts in params.items()},
    )


def unwrap(text: str) -> str:
    """``text`` with each paragraph and each list item on one line, paragraphs apart by one blank line."""
    blocks = []
    for block in re.split(r"\n\s*\n", text.strip()):
        items: list[list[str]] = []
        for line in block.splitlines():
            line = line.strip()
            if not items or re.match(r"^(-|\*|\d+\.)\s", line):
                items.append([line])
            else:
                items[-1].append(line)
        blocks.append("\n".join(" ".join(item) for item in items))
    return "\n\n".join(blocks)


def tools_for_mode(mode: Mode | str) -> tuple[str, ...]:
    """The memory tools of ``mode`` (optional ones included; the server skips those not installed).

    Raises:
        ValueError: an unknown mode.
    """
    try:
        return MODE_TOOLS[mode]
    except KeyError:
        raise ValueError(f"Unknown memory mode {mode!r}: use one of {', '.join(MODES)}.") from None


def offers_skills(mode: Mode | str) -> bool:
    """True when the mode has LoadSkill (and so the hidden workspace tools)."""
    return "LoadSkill" in tools_for_mode(mode)


__all__ = [
    "MODES",
    "MODE_TOOLS",
    "TOOLS",
    "ToolDoc",
    "ToolSpec",
    "WORKSPACE_SPECS",
    "offers_skills",
    "parse_docstring",
    "tools_for_mode",
]
