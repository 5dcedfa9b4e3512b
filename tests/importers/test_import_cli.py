"""`memdir import --from FORMAT SOURCE`, through the CLI, on data the real tools wrote where they run here.

* mcp-memory: the MCP reference memory server (npm, `.ci/run` installs it under ``.ci/npm``) is
  driven over stdio by the official MCP client: entities, observations and relations are written
  through its own tools, then its ``memory.jsonl`` is imported.
* mcp-memory-service: its database and JSON export, written through its own MCP tools by
  ``tests/fixtures/importers/make_memory_service_fixture.py`` (it cannot run in CI) and committed.
* basic-memory (needs Python 3.12, this machine has 3.11), Claude.ai and ChatGPT exports: samples
  built in the documented format (see each importer's docstring for where it is documented).

Every import is run twice: the second changes nothing. Bad records are skipped with a line.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import zipfile
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from typer.testing import CliRunner

from memdir.cli import app
from memdir.core.settings import Settings
from memdir.memory import Memory
from tests.prerequisites import missing_prerequisite

PROJECT = Path(__file__).resolve().parents[2]
FIXTURES = PROJECT / "tests" / "fixtures" / "importers"
REFERENCE_SERVER = Path(os.environ.get(
    "MEMDIR_TEST_REFERENCE_MEMORY_SERVER",
    PROJECT / ".ci" / "npm" / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"))
runner = CliRunner()


@pytest.fixture(autouse=True)
def keyword_only(monkeypatch):
    monkeypatch.setenv("MEMDIR_EMBEDDINGS_ENABLED", "false")


def run_import(fmt: str, source: Path, root: Path) -> str:
    result = runner.invoke(app, ["import", "--from", fmt, str(source), "--root", str(root)])
    assert result.exit_code == 0, result.output
    return result.output


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*"))
            if path.is_file() and ".memdir" not in path.parts and "audit" not in path.parts and path.name != ".lock"}


def open_memory(root: Path) -> Memory:
    return Memory.open(Settings(root=root), load_model=False, read_only=True)


def imported(entry) -> dict:
    return (entry.metadata.model_extra or {})["imported"]


# --------------------------------------------------------------------------- the reference server
async def write_through_reference_server(memory_file: Path) -> None:
    if not REFERENCE_SERVER.exists() or shutil.which("node") is None:
        missing_prerequisite("The MCP reference memory server (Node.js) is not installed: "
                             "apt-get install nodejs npm && npm ci --prefix .ci/npm")
    params = StdioServerParameters(command=shutil.which("node") or "node", args=[str(REFERENCE_SERVER)],
                                   env={"MEMORY_FILE_PATH": str(memory_file), "PATH": os.environ["PATH"]})
    async with Client(params, mode="legacy") as client:
        async def call(tool: str, arguments: dict) -> None:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result.content

        await call("create_entities", {"entities": [
            {"name": "Alice Meyer", "entityType": "person", "observations": ["Leads the payments team"]},
            {"name": "Payments API", "entityType": "service", "observations": ["Written in Go", "Owns refunds"]},
            {"name": "API v1", "entityType": "service", "observations": ["Retired in March"]},
        ]})
        await call("add_observations", {"observations": [
            {"entityName": "Alice Meyer", "contents": ["Prefers written design reviews"]}]})
        await call("create_relations", {"relations": [
            {"from": "Alice Meyer", "to": "Payments API", "relationType": "owns"},
            {"from": "Payments API", "to": "API v1", "relationType": "supersedes"},
        ]})


def test_the_reference_servers_graph_comes_in_whole_and_once(tmp_path):
    source, root = tmp_path / "memory.jsonl", tmp_path / "memory"
    anyio.run(write_through_reference_server, source)
    first = run_import("mcp-memory", source, root)
    assert "mcp-memory: 3 imported, 0 updated, 0 unchanged, 0 skipped, 2 links." in first
    with open_memory(root) as memory:
        alice = memory.read("concept/person/alice-meyer.md")
        assert alice.title == "Alice Meyer" and alice.metadata.tags == ["person"]
        assert "- Leads the payments team" in alice.content and "- Prefers written design reviews" in alice.content
        assert [(link.target, link.kind) for link in alice.metadata.links] == [("concept/service/payments-api.md", "references")]
        assert imported(alice)["id"] == "Alice Meyer" and imported(alice)["relations"] == [{"to": "Payments API", "relation": "owns"}]
        api = memory.read("concept/service/payments-api.md")
        assert [(link.target, link.kind) for link in api.metadata.links] == [("concept/service/api-v1.md", "supersedes")]
    before = snapshot(root)
    again = run_import("mcp-memory", source, root)
    assert "0 imported, 0 updated, 3 unchanged, 0 skipped." in again
    assert snapshot(root) == before


def test_bad_lines_are_skipped_by_name_and_the_rest_comes_in(tmp_path):
    source, root = tmp_path / "memory.jsonl", tmp_path / "memory"
    source.write_text("\n".join([
        json.dumps({"type": "entity", "name": "Ok", "entityType": "thing", "observations": ["fine"]}),
        "{not json",
        json.dumps({"type": "entity", "name": "", "entityType": "thing", "observations": []}),
        json.dumps({"type": "entity", "name": "Odd", "entityType": "thing", "observations": "not a list"}),
        json.dumps({"type": "relation", "from": "Ok", "to": "Missing", "relationType": "uses"}),
        json.dumps({"type": "relation", "from": "Ghost", "to": "Ok", "relationType": "uses"}),
    ]) + "\n")
    output = run_import("mcp-memory", source, root)
    assert "1 imported, 0 updated, 0 unchanged, 5 skipped" in output
    for line in ("skipped line 2: not JSON", 'skipped line 3: an entity needs a "name"',
                 'skipped line 4: "observations" must be a list of strings',
                 "skipped link 'Ok' -> 'Missing': the target is not in the source",
                 "skipped line 6: relation from 'Ghost', which is no entity"):
        assert line in output, output


def test_a_record_memdir_refuses_to_store_is_skipped_by_name_and_its_batch_comes_in(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMDIR_MAX_ENTRY_SIZE", "400")
    source, root = tmp_path / "memory.jsonl", tmp_path / "memory"
    source.write_text("".join(json.dumps({"type": "entity", "name": name, "entityType": "thing", "observations": [text]})
                              + "\n" for name, text in [("Before", "small"), ("Huge", "x" * 500), ("After", "small")]))
    output = run_import("mcp-memory", source, root)
    assert "2 imported, 0 updated, 0 unchanged, 1 skipped" in output, output
    assert "skipped record 'Huge': " in output and "400" in output
    with open_memory(root) as memory:
        assert [info.path for info in memory.list("concept/")] == ["concept/thing/after.md", "concept/thing/before.md"]


def test_names_in_any_script_get_paths_of_their_own(tmp_path):
    source, root = tmp_path / "memory.jsonl", tmp_path / "memory"
    source.write_text("".join(json.dumps({"type": "entity", "name": name, "entityType": "city", "observations": [name]}) + "\n"
                              for name in ("東京", "大阪", "Zürich")))
    assert "3 imported" in run_import("mcp-memory", source, root)
    source.write_text(source.read_text() + json.dumps({"type": "entity", "name": "京都", "entityType": "city",
                                                       "observations": []}) + "\n")
    assert "1 imported, 0 updated, 3 unchanged, 0 skipped" in run_import("mcp-memory", source, root)
    with open_memory(root) as memory:
        assert memory.exists("concept/city/zurich.md")
        assert sorted(memory.read(info.path).title for info in memory.list("concept/city/")) == ["Zürich", "京都", "大阪", "東京"]


def test_an_entry_an_agent_wrote_at_the_same_path_is_never_overwritten(tmp_path):
    source, root = tmp_path / "memory.jsonl", tmp_path / "memory"
    source.write_text(json.dumps({"type": "entity", "name": "Bob", "entityType": "person", "observations": ["x"]}) + "\n")
    with Memory.open(Settings(root=root), load_model=False) as memory:
        memory.write("concept/person/bob.md", "Bob, as the agent knows him.", title="Bob")
    output = run_import("mcp-memory", source, root)
    assert "memory://concept/person/bob.md already holds another entry; it is left as it is" in output
    with open_memory(root) as memory:
        assert memory.read("concept/person/bob.md").content == "Bob, as the agent knows him."


def test_an_unknown_format_or_a_missing_source_is_refused_and_changes_nothing(tmp_path):
    root = tmp_path / "memory"
    unknown = runner.invoke(app, ["import", "--from", "mcp-memroy", str(tmp_path), "--root", str(root)])
    assert unknown.exit_code == 1 and "'mcp-memroy' is not a format memdir imports" in unknown.output
    assert "Did you mean 'mcp-memory'?" in unknown.output
    missing = runner.invoke(app, ["import", "--from", "mcp-memory", str(tmp_path / "nope.jsonl"), "--root", str(root)])
    assert missing.exit_code == 1 and "nope.jsonl does not exist" in missing.output
    assert not any(root.rglob("*.md"))


# --------------------------------------------------------------------------- mcp-memory-service
@pytest.mark.parametrize("kind", ["database", "export"])
def test_mcp_memory_service_memories_come_in_with_their_tags_types_and_times(tmp_path, kind):
    root = tmp_path / "memory"
    if kind == "database":
        source = tmp_path / "sqlite_vec.db"
        source.write_bytes(gzip.decompress((FIXTURES / "memory_service" / "sqlite_vec.db.gz").read_bytes()))
    else:
        source = FIXTURES / "memory_service" / "export.json"
    output = run_import("mcp-memory-service", source, root)
    expected_skips = 1 if kind == "database" else 0  # the deleted memory is a tombstone in the database only
    assert f"4 imported, 0 updated, 0 unchanged, {expected_skips} skipped" in output, output
    if kind == "database":
        assert "was deleted in mcp-memory-service" in output and "3 links" in output  # "related" goes both ways
    with open_memory(root) as memory:
        entries = {entry.path: memory.read(entry.path) for entry in memory.list("fact/")}
        contents = {entry.content.strip() for entry in entries.values()}
        assert "Deploys go out on Tuesdays and Thursdays after the 10:00 stand-up." in contents
        assert not any("Temporary note" in text for text in contents)
        deploy = next(entry for entry in entries.values() if entry.content.startswith("Deploys"))
        assert deploy.path.startswith("fact/decision/deploys-go-out-on-tuesdays")
        assert deploy.metadata.tags == ["deploy", "schedule"]
        origin = imported(deploy)
        assert origin["memory_type"] == "decision" and origin["metadata"] == {"project": "webshop"}
        assert len(origin["id"]) == 64 and origin["created_at"].startswith("2026-")
        assert deploy.updated_at.isoformat() == origin["updated_at"]  # the source's time, not the import's
        if kind == "database":
            fix = next(entry for entry in entries.values() if entry.content.startswith("Fixed"))
            assert [(link.target, link.kind) for link in fix.metadata.links] == [(deploy.path, "references")]
    before = snapshot(root)
    assert "0 imported, 0 updated, 4 unchanged" in run_import("mcp-memory-service", source, root)
    assert snapshot(root) == before


# --------------------------------------------------------------------------- basic-memory
NOTES = {
    "Coffee Brewing.md": """---
title: Coffee Brewing Methods
type: note
tags: [coffee, brewing]
permalink: coffee-brewing-methods
rating: 4
---
# Coffee Brewing Methods

## Observations
- [method] Pour over gives more clarity than French press #clarity
- [technique] Water at 96 C extracts best (from experience)

## Relations
- relates_to [[Coffee Bean Origins]]
- requires [[Grinding]]
- extends [[Tea Brewing]]
""",
    "origins/Coffee Bean Origins.md": """---
title: Coffee Bean Origins
tags: coffee, origins
---
Ethiopian beans suit light roasts. See [[Coffee Brewing Methods]].
""",
    "Grinding.md": "# Grinding\n\nBurr grinders give an even grind.\n",
    ".basic-memory/state.md": "internal, not a note",
    "broken.md": "---\ntitle: [unclosed\n---\nbody\n",
}


def test_a_basic_memory_folder_comes_in_with_its_relations(tmp_path):
    folder, root = tmp_path / "notes", tmp_path / "memory"
    for name, text in NOTES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    output = run_import("basic-memory", folder, root)
    assert "3 imported, 0 updated, 0 unchanged, 2 skipped, 3 links." in output, output
    assert "skipped broken.md: cannot be read as a note" in output
    assert "skipped extends [[Tea Brewing]] in coffee-brewing-methods: no note has that title or permalink" in output
    with open_memory(root) as memory:
        brewing = memory.read("concept/coffee-brewing.md")
        assert brewing.title == "Coffee Brewing Methods"
        assert "- [method] Pour over gives more clarity than French press #clarity" in brewing.content
        assert brewing.metadata.tags == ["coffee", "brewing", "clarity"]
        assert sorted((link.target, link.kind) for link in brewing.metadata.links) == [
            ("concept/grinding.md", "references"), ("concept/origins/coffee-bean-origins.md", "references")]
        origin = imported(brewing)
        assert origin["id"] == "coffee-brewing-methods" and origin["frontmatter"] == {"rating": 4}
        assert {"to": "grinding", "relation": "requires"} in origin["relations"]  # by permalink
        beans = memory.read("concept/origins/coffee-bean-origins.md")
        assert beans.metadata.tags == ["coffee", "origins"]
        assert [link.target for link in beans.metadata.links] == ["concept/coffee-brewing.md"]  # an inline [[link]]
        assert not memory.exists("concept/basic-memory/state.md")
    before = snapshot(root)
    assert "0 imported, 0 updated, 3 unchanged" in run_import("basic-memory", folder, root)
    assert snapshot(root) == before
    (folder / "Grinding.md").write_text("# Grinding\n\nBurr grinders give an even grind. Blades do not.\n")
    assert "0 imported, 1 updated, 2 unchanged" in run_import("basic-memory", folder, root)
    with Memory.open(Settings(root=root), load_model=False) as memory:  # a change made in memdir since
        memory.write("concept/grinding.md", "Hand grinders too.", title="Grinding",
                     metadata=memory.read("concept/grinding.md").metadata)
    (folder / "Grinding.md").write_text("# Grinding\n\nBurr grinders, the source says now.\n")
    output = run_import("basic-memory", folder, root)
    assert "0 imported, 0 updated, 2 unchanged, 3 skipped" in output
    assert "memory://concept/grinding.md was changed in memdir since it was imported; it is left as it is" in output


# --------------------------------------------------------------------------- conversation exports
CLAUDE = [
    {"uuid": "c0ffee00-0000-4000-8000-000000000001", "name": "Plan the database migration",
     "created_at": "2026-03-02T09:00:00.000000Z", "updated_at": "2026-03-02T09:20:00.000000Z",
     "chat_messages": [
         {"uuid": "m1", "sender": "human", "created_at": "2026-03-02T09:00:00Z", "text": "",
          "content": [{"type": "text", "text": "How do we migrate the orders table without downtime?"}]},
         {"uuid": "m2", "sender": "assistant", "created_at": "2026-03-02T09:01:00Z",
          "text": "Add the new column, backfill in batches, then switch reads.", "content": []},
     ]},
    {"uuid": "c0ffee00-0000-4000-8000-000000000002", "name": "empty", "created_at": "2026-03-03T09:00:00Z",
     "updated_at": "2026-03-03T09:00:00Z", "chat_messages": []},
    {"name": "no id", "chat_messages": []},
]
CHATGPT = [
    {"id": "67a0-chat", "title": "Fix the flaky test", "create_time": 1772442000.0, "update_time": 1772442600.0,
     "current_node": "n3", "mapping": {
         "root": {"id": "root", "message": None, "parent": None, "children": ["n1"]},
         "n1": {"id": "n1", "parent": "root", "children": ["n2", "old"], "message": {
             "id": "n1", "author": {"role": "user"}, "create_time": 1772442000.0,
             "content": {"content_type": "text", "parts": ["The login test fails one run in ten."]}}},
         "old": {"id": "old", "parent": "n1", "children": [], "message": {
             "id": "old", "author": {"role": "assistant"}, "create_time": 1772442050.0,
             "content": {"content_type": "text", "parts": ["A discarded answer."]}}},
         "n2": {"id": "n2", "parent": "n1", "children": ["n3"], "message": {
             "id": "n2", "author": {"role": "assistant"}, "create_time": 1772442060.0,
             "content": {"content_type": "text", "parts": ["It races the session cookie: wait for /me first."]}}},
         "n3": {"id": "n3", "parent": "n2", "children": [], "message": {
             "id": "n3", "author": {"role": "system"}, "create_time": 1772442070.0,
             "content": {"content_type": "text", "parts": ["hidden system text"]}}},
     }},
    {"title": "no id", "mapping": {}},
    ["not", "a", "conversation"],
]


@pytest.mark.parametrize("fmt", ["claude", "chatgpt"])
def test_conversation_exports_become_episodes_once(tmp_path, fmt):
    root = tmp_path / "memory"
    source = tmp_path / "export.zip"
    with zipfile.ZipFile(source, "w") as archive:  # the export as downloaded
        archive.writestr("conversations.json", json.dumps(CLAUDE if fmt == "claude" else CHATGPT))
    output = run_import(fmt, source, root)
    assert "1 imported, 0 updated, 0 unchanged, 2 skipped" in output, output
    with open_memory(root) as memory:
        [info] = memory.list("experience/episodes/")
        episode = memory.read(info.path)
        extra = episode.metadata.model_extra or {}
        title = "Plan the database migration" if fmt == "claude" else "Fix the flaky test"
        assert episode.title == title and extra["episode"] == title  # the conversation's title names its episode
        if fmt == "claude":
            assert extra["session_id"] == "claude.ai:c0ffee00-0000-4000-8000-000000000001"
            assert extra["started"] == "2026-03-02T09:00:00+00:00" and extra["messages"] == 2
            assert "skipped conversation 2 (claude.ai:c0ffee00-0000-4000-8000-000000000002): it holds no messages" in output
            assert 'skipped conversation 3: it has no "uuid"' in output
        else:
            assert extra["session_id"] == "chatgpt:67a0-chat" and extra["messages"] == 2
            assert "races the session cookie" in episode.content and "discarded" not in episode.content
            assert "hidden system text" not in episode.content
            assert 'skipped conversation 2: it has no "id"' in output
            assert 'skipped conversation 3: not a ChatGPT conversation (no "mapping" of messages)' in output
    before = snapshot(root)
    assert "0 imported, 0 updated, 1 unchanged" in run_import(fmt, source, root)
    assert snapshot(root) == before


def test_a_conversation_cut_into_several_episodes_names_each_after_its_title(tmp_path):
    later = [{"uuid": f"m{n}", "sender": sender, "created_at": f"2026-03-02T14:0{n}:00Z", "text": text, "content": []}
             for n, (sender, text) in enumerate([("human", "Back after lunch: the backfill is slow on orders."),
                                                 ("assistant", "Raise the batch size and add an index first.")], start=3)]
    conversation = {**CLAUDE[0], "chat_messages": [*CLAUDE[0]["chat_messages"], *later]}  # hours later: a new episode
    source, root = tmp_path / "conversations.json", tmp_path / "memory"
    source.write_text(json.dumps([conversation]))
    assert "2 imported" in run_import("claude", source, root)
    with open_memory(root) as memory:
        names = sorted(memory.read(info.path).title for info in memory.list("experience/episodes/"))
    assert names == ["Plan the database migration (1/2)", "Plan the database migration (2/2)"]
