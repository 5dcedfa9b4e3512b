"""End to end: `python -m memdir serve` as a subprocess, driven over stdio by the official MCP client.

Most runs switch the embedding model off (MEMDIR_EMBEDDINGS_ENABLED=false: keyword search)
for speed; `test_semantic_discovery_with_the_real_model` runs the real one.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp_types import ToolListChangedNotification

from tests.mappings import mappings

pytestmark = pytest.mark.anyio

RETRIEVAL = ["MemoryRead", "MemoryGlob", "MemoryGrep", "MemorySearch", "MemoryDiscover", "MemoryGraph", "ThreadList"]
ASSISTANT = [*RETRIEVAL[:-1], "MemoryWrite", "MemoryEdit", "MemoryLink", "MemoryUnlink", "ThreadAppend", "ThreadContext", "ThreadControl", "ThreadList",
             "LoadSkill"]

SKILL_TOOLS = {"tools": ["Read", "Write", "Bash"],
               "permissions": {"Bash": {"allowed_commands": ["^echo "]}, "Write": {"denied_paths": ["secrets/**"]}}}


@pytest.fixture
def dirs(tmp_path):
    (tmp_path / "ws" / "secrets").mkdir(parents=True)
    (tmp_path / "ws" / "notes.txt").write_text("hello from the workspace\n")
    return tmp_path


def server_params(tmp_path: Path, mode: str = "assistant", *, model: bool = False, allow_bash: bool = False,
                  cache_dir: Path | None = None) -> StdioServerParameters:
    args = ["-m", "memdir", "serve", "--root", str(tmp_path / "memory"), "--mode", mode,
            "--workspace", str(tmp_path / "ws")]
    if allow_bash:
        args.append("--allow-bash")
    env = {"MEMDIR_CONFIG": str(tmp_path / "memdir.toml"), "MEMDIR_EMBEDDINGS_ENABLED": "true" if model else "false"}
    if os.environ.get("PYTHONPATH"):  # the server imports the same memdir as the tests
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    if cache_dir:
        env["MEMDIR_CACHE_DIR"] = str(cache_dir)
    return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=str(tmp_path))


@asynccontextmanager
async def connect(tmp_path: Path, mode: str = "assistant", *, protocol: str = "legacy", **kwargs):
    """A client over stdio; ``client.notifications`` collects what the server sent."""
    notifications: list = []

    async def on_message(message) -> None:
        notifications.append(message)

    async with Client(server_params(tmp_path, mode, **kwargs), mode=protocol, message_handler=on_message) as client:
        client.notifications = notifications  # type: ignore[attr-defined]
        yield client


def text(result) -> str:
    return "\n".join(block.text for block in result.content)


async def names(client) -> list[str]:
    return [tool.name for tool in (await client.list_tools()).tools]


async def call(client, tool: str, **arguments) -> str:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text(result)
    return text(result)


async def refused(client, tool: str, **arguments) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, text(result)
    return text(result)


async def write(client, path: str, content: str, type_: str, **extra) -> str:
    folders = path.split("/")
    args = {"file_path": path, "content": content, "title": extra.pop("title", path), "type": type_,
            "tags": extra.pop("tags", []), "related": [], "domain": folders[1] if len(folders) > 2 else "general", **extra}
    return await call(client, "MemoryWrite", **args)


# --------------------------------------------------------------------------- start-up and modes
@pytest.mark.parametrize(("mode", "expected"), [
    ("retrieval", RETRIEVAL),
    ("assistant", ASSISTANT),
    ("researcher", [*ASSISTANT[:-1], "MemoryDelete"]),
])
async def test_each_mode_lists_its_tools_and_sends_its_instructions(dirs, mode, expected):
    started = time.perf_counter()
    async with connect(dirs, mode) as client:
        listed = await names(client)
        elapsed = time.perf_counter() - started
        assert listed[: len(expected)] == expected and listed[-1] == ("LoadSkill" if mode != "retrieval" else "ThreadList")
        assert not {"Read", "Write", "Edit", "Glob", "Grep", "Bash"} & set(listed)  # hidden until a skill lists them
        assert client.instructions and "memory" in client.instructions.lower()
        assert client.server_capabilities.tools.list_changed is True
    assert elapsed < 10, f"spawn to tools/list took {elapsed:.2f}s"


# --------------------------------------------------------------------------- the memory tools
async def test_write_read_edit_glob_grep_delete(dirs):
    async with connect(dirs, "researcher") as client:
        stored = await write(client, "fact/api/limits.md", "The API allows 100 requests per minute.", "fact",
                             title="API rate limit", tags='["api", "limits"]')  # a SwarmMemory-style JSON string
        assert stored == "Stored at memory://fact/api/limits.md (39B)"

        assert await call(client, "MemoryRead", file_path="fact/api/limits") == "     1 The API allows 100 requests per minute."
        edited = await call(client, "MemoryEdit", file_path="fact/api/limits.md", old_string="100", new_string="120")
        assert "memory://fact/api/limits.md" in edited
        assert "120 requests" in await call(client, "MemoryRead", file_path="fact/api/limits.md")

        assert 'memory://fact/api/limits.md "API rate limit"' in await call(client, "MemoryGlob", pattern="fact/**")
        assert "memory://fact/api/limits.md" in await call(client, "MemoryGrep", pattern="requests per")
        counted = await call(client, "MemoryGrep", pattern="minute", output_mode="count")
        assert "1 match" in counted
        found = await call(client, "MemorySearch", query="how many requests per minute?", top_k=5, explain=True)
        heading, first, snippet = found.splitlines()[:3]
        assert heading == "1 result for 'how many requests per minute?' (keyword search only: no embedding model is ready):"
        assert first.startswith('1. memory://fact/api/limits.md "API rate limit" (fact, score 0.')
        assert snippet == "   The API allows 120 requests per minute."
        assert "bm25 1.000" in found
        assert "top_k must be a whole number from 1 to 50" in await refused(client, "MemorySearch", query="x", top_k=51)

        assert await call(client, "MemoryDelete", file_path="fact/api/limits.md") == "Deleted memory://fact/api/limits.md"
        assert "not found" in await refused(client, "MemoryRead", file_path="fact/api/limits.md")


async def test_link_graph_traverse_unlink(dirs):
    async with connect(dirs) as client:
        await write(client, "concept/http/retries.md", "Retry with backoff.", "concept", title="Retries")
        await write(client, "concept/http/timeouts.md", "Time out after 30 s.", "concept", title="Timeouts")
        linked = await call(client, "MemoryLink", source="concept/http/retries", target="concept/http/timeouts.md",
                            kind="extends", strength=0.8)
        assert linked == "Linked memory://concept/http/retries.md —extends 0.80→ memory://concept/http/timeouts.md"
        assert "Did you mean 'extends'?" in await refused(client, "MemoryLink", source="concept/http/retries",
                                                          target="concept/http/timeouts", kind="extend")
        shown = await call(client, "MemoryGraph", path="concept/http/timeouts.md", mermaid=True)
        assert ('- memory://concept/http/retries.md "Retries" —extends 0.80 (user)→ '
                'memory://concept/http/timeouts.md "Timeouts"') in shown
        assert "```mermaid\ngraph LR" in shown and '-->|"extends 0.80"|' in shown
        await call(client, "MemoryRead", file_path="concept/http/retries.md")  # followed from the graph
        assert "traversed_at" in (dirs / "memory" / "concept" / "http" / "retries.yml").read_text()
        removed = await call(client, "MemoryUnlink", source="concept/http/retries.md", target="concept/http/timeouts")
        assert removed == "Removed 1 link from memory://concept/http/retries.md to memory://concept/http/timeouts.md: extends"
        assert "has no links" in await call(client, "MemoryGraph", path="concept/http/timeouts.md")


async def test_edits_need_a_fresh_read(dirs):
    async with connect(dirs) as client:
        await write(client, "concept/cats.md", "Cats sleep a lot.", "concept")
        never_read = await refused(client, "MemoryEdit", file_path="concept/cats.md", old_string="a lot", new_string="16h")
        assert "read" in never_read.lower()

        await call(client, "MemoryRead", file_path="concept/cats.md")
        (dirs / "memory" / "concept" / "cats.md").write_text("Cats sleep a lot, mostly by day.")  # changed behind its back
        stale = await refused(client, "MemoryEdit", file_path="concept/cats.md", old_string="a lot", new_string="16h")
        assert "has changed since you last read it" in stale

        await call(client, "MemoryRead", file_path="concept/cats.md")
        await call(client, "MemoryEdit", file_path="concept/cats.md", old_string="a lot", new_string="16h")


async def test_invalid_input_comes_back_as_a_tool_error(dirs):
    async with connect(dirs) as client:
        wrong_folder = await refused(client, "MemoryWrite", file_path="notes/x.md", content="x", title="x",
                                     type="fact", tags=[], related=[], domain="d")
        assert "must be stored under fact/" in wrong_folder
        too_long = await refused(client, "MemoryWrite", file_path="fact/x.md", content="word " * 251, title="x",
                                 type="fact", tags=[], related=[], domain="d")
        assert "Content exceeds 250-word limit (251 words)." in too_long
        assert "Skills must be stored in skill/ hierarchy" in await refused(client, "LoadSkill", file_path="fact/x.md")


async def test_a_root_that_cannot_be_opened_is_reported_by_every_tool(dirs):
    (dirs / "memory").write_text("a file where the memory directory should be")
    async with connect(dirs) as client:
        assert "MemoryGlob" in await names(client)  # the server still starts and lists its tools
        message = await refused(client, "MemoryGlob", pattern="**/*")
        assert f"memdir could not open the memory at {dirs / 'memory'}" in message
        assert "Check that --root" in message


async def test_retrieval_mode_cannot_write(dirs):
    async with connect(dirs, "retrieval") as client:
        result = await client.call_tool("MemoryWrite", {"file_path": "fact/x.md"})
        assert result.is_error and "Unknown tool" in text(result)


# --------------------------------------------------------------------------- LoadSkill
async def test_load_skill_swaps_the_toolset_and_notifies(dirs):
    async with connect(dirs, allow_bash=True) as client:
        assert "is not in your current toolset" in await refused(client, "Read", file_path="notes.txt")
        await write(client, "skill/workspace/notes.md", "1. Read notes.txt\n2. Echo a greeting", "skill",
                    title="Work with notes", **SKILL_TOOLS)
        before = len(client.notifications)

        loaded = await call(client, "LoadSkill", file_path="skill/workspace/notes.md")
        assert loaded.startswith("Loaded skill: Work with notes\n\n     1 1. Read notes.txt")
        assert "Your available tools have been updated.\n\nNew tools loaded from skill:\n  - Read\n  - Write\n  - Bash" in loaded
        assert "Only use tools from this list.\n</system-reminder>" in loaded
        with anyio.fail_after(5):
            while not any(isinstance(m, ToolListChangedNotification) for m in client.notifications[before:]):
                await anyio.sleep(0.05)
        listed = await names(client)
        assert listed == [*ASSISTANT, "Read", "Write", "Bash"]

        assert await call(client, "Read", file_path="notes.txt") == "     1\thello from the workspace"
        assert await call(client, "Bash", command="echo hi") == "hi"

        # the wrapped tools enforce the skill's permissions
        bash = await refused(client, "Bash", command="rm -rf /")
        assert "'rm -rf /' is not allowed by the loaded skill" in bash
        denied = await refused(client, "Write", file_path="secrets/key.txt", content="leak")
        assert "matches the loaded skill's denied path 'secrets/**'" in denied
        assert not (dirs / "ws" / "secrets" / "key.txt").exists()
        outside = await refused(client, "Read", file_path="../memdir.toml")
        assert "outside the workspace" in outside

        # a second skill replaces the first one's tools; the memory tools stay
        await write(client, "skill/workspace/search.md", "Grep the workspace.", "skill", title="Search", tools=["Grep"])
        await call(client, "LoadSkill", file_path="skill/workspace/search.md")
        assert await names(client) == [*ASSISTANT, "Grep"]
        assert "is not in your current toolset" in await refused(client, "Bash", command="echo hi")


async def test_bash_stays_off_unless_the_server_allows_it(dirs):
    async with connect(dirs) as client:
        await write(client, "skill/shell.md", "Echo things.", "skill", tools=["Bash"],
                    permissions={"Bash": {"allowed_commands": ["^echo "]}})
        loaded = await call(client, "LoadSkill", file_path="skill/shell.md")
        assert "Bash is listed by this skill but disabled on this memdir server" in loaded
        assert "Bash is disabled on this memdir server" in await refused(client, "Bash", command="echo hi")


async def test_a_2026_era_client_gets_the_same_tools(dirs):
    async with connect(dirs, protocol="auto") as client:
        assert client.protocol_version >= "2026"
        await write(client, "skill/reader.md", "Read files.", "skill", tools=["Read"])
        async with client.listen(tools_list_changed=True) as events:
            await call(client, "LoadSkill", file_path="skill/reader.md")
            with anyio.fail_after(5):
                async for _ in events:
                    break
        assert await names(client) == [*ASSISTANT, "Read"]


# --------------------------------------------------------------------------- resources and prompts
async def test_entries_are_resources(dirs):
    async with connect(dirs) as client:
        await write(client, "fact/people/ada.md", "Ada wrote the first program.", "fact", title="Ada Lovelace")
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["memory://{+path}"]
        listed = {str(r.uri): r for r in (await client.list_resources()).resources}
        assert listed["memory://fact/people/ada.md"].title == "Ada Lovelace"
        assert "memory://skill/meta/deep-learning.md" in listed  # the built-in skill
        contents = (await client.read_resource("memory://fact/people/ada.md")).contents
        assert contents[0].text == "Ada wrote the first program."
        assert contents[0].mime_type == "text/markdown"


async def test_prompts(dirs):
    async with connect(dirs) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        assert set(prompts) == {"assistant", "retrieval", "researcher", "discover", "where_we_left_off"}
        assert [a.name for a in prompts["discover"].arguments] == ["message"]
        assert [a.name for a in prompts["where_we_left_off"].arguments] == ["project"]
        start = await client.get_prompt("where_we_left_off")
        assert "No episodes recorded yet" in start.messages[0].content.text
        assistant = await client.get_prompt("assistant")
        assert assistant.messages[0].content.text == client.instructions
        await write(client, "skill/git/rebase.md", "Fetch, rebase onto main, run the tests, push.", "skill",
                    title="Rebase a branch", tags=["git", "rebase", "branch"])
        discovered = await client.get_prompt("discover", {"message": "rebase my git branch"})
        body = discovered.messages[0].content.text
        assert 'To use: `LoadSkill(file_path: "skill/git/rebase.md")`' in body
        assert body.endswith("\n\nrebase my git branch")


# --------------------------------------------------------------------------- the real model
@pytest.mark.model
async def test_semantic_discovery_with_the_real_model(dirs, model_cache_dir):
    async with connect(dirs, model=True, cache_dir=model_cache_dir) as client:
        started = time.perf_counter()
        await write(client, "skill/debugging/flaky-tests.md",
                    "Rerun the failing test in isolation, check for shared state and time dependence.", "skill",
                    title="Debug flaky tests", tags=["testing", "debugging"])
        await write(client, "concept/cooking/bread.md", "Yeast produces carbon dioxide, so the dough rises.",
                    "concept", title="Why bread rises", tags=["baking"])
        # the model loads in the background; once ready, entries written before it get embedded
        vector = dirs / "memory" / "skill" / "debugging" / "flaky-tests.emb"
        with anyio.fail_after(120):
            while not vector.exists():
                await anyio.sleep(0.2)
        assert vector.stat().st_size == 384 * 4
        found = await call(client, "MemoryDiscover", message="my unit tests fail randomly on CI")
        assert 'To use: `LoadSkill(file_path: "skill/debugging/flaky-tests.md")`' in found
        assert "bread" not in found
        assert time.perf_counter() - started < 120
        if sys.platform == "linux":  # the model's word table is held for the words met, not whole (44.7 MB)
            table = [m for m in mappings(_server_pid()) if "nh" in m.flags and m.end - m.start >= 30522 * 384 * 4]
            assert len(table) == 1 and table[0].resident < 4 * 1024 * 1024, table


def _server_pid() -> int:
    """The `memdir serve` this test process started last (those of earlier tests may still be ending)."""
    children = [int(pid) for task in Path("/proc/self/task").iterdir() for pid in (task / "children").read_text().split()]
    serving = [pid for pid in children if b"serve" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")]
    return max(serving, key=lambda pid: int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]))
