"""Contract test: each mode's tools — names, titles, annotations and parameters — frozen.

Changing a tool's surface breaks prompts and clients trained on it; if one of these
assertions fails on purpose, update the contract here in the same change.

Annotation codes: R readOnlyHint, D destructiveHint, I idempotentHint, O openWorldHint.
Parameter shapes: JSON-schema type (``:a|b`` lists an enum), ``?`` marks optional ones.
"""

from __future__ import annotations

import importlib.util

import anyio
import pytest

from memdir.core.settings import Settings
from memdir.server.app import build_server
from memdir.server.modes import MODE_TOOLS, tools_for_mode

CONTRACT = {
    "MemoryRead": ("Read memory entry", "RI", {"file_path": "string"}),
    "MemoryGlob": ("Find memory entries by path", "RI", {"pattern": "string", "view_all": "boolean?"}),
    "MemoryGrep": ("Search memory contents", "RI", {
        "pattern": "string", "path": "string?", "case_insensitive": "boolean?",
        "output_mode": "string:files_with_matches|content|count?",
    }),
    "MemorySearch": ("Search memory by meaning and keywords", "RI", {
        "query": "string", "top_k": "integer?", "type": "array[string]?", "path_prefix": "string?",
        "tags": "array[string]?", "threshold": "number?", "explain": "boolean?", "view_all": "boolean?", "include_archived": "boolean?",
        "min_importance": "number?",
    }),
    "MemoryDiscover": ("Discover relevant skills and memories", "RI", {"message": "string", "view_all": "boolean?"}),
    "MemoryWrite": ("Write memory entry", "DI", {
        "file_path": "string", "content": "string", "title": "string",
        "type": "string:concept|fact|skill|experience", "tags": "array[string]", "related": "array[string]",
        "domain": "string", "confidence": "string:high|medium|low?", "source": "string?",
        "tools": "array[string]?", "permissions": "object?",
        "kind": "string:decision|architecture|coordination|pattern|skill|bug|test|implementation?",
    }),
    "MemoryEdit": ("Edit memory entry", "D", {
        "file_path": "string", "old_string": "string", "new_string": "string", "replace_all": "boolean?",
    }),
    "MemoryGraph": ("Show linked memory entries", "RI", {
        "path": "string", "hops": "integer?", "kinds": "array[string]?", "mermaid": "boolean?",
    }),
    "MemoryLink": ("Link memory entries", "I", {
        "source": "string", "target": "string", "kind": "string?", "strength": "number?",
    }),
    "MemoryUnlink": ("Unlink memory entries", "D", {"source": "string", "target": "string", "kind": "string?"}),
    "MemoryDelete": ("Delete memory entry", "DI", {"file_path": "string"}),
    "MemoryDefrag": ("Analyze and optimize memory", "D", {
        "action": "string:analyze|find_duplicates|find_low_quality|find_archival_candidates|find_related|"
                  "link_related|merge_duplicates|cleanup_stubs|compact|full",
        "similarity_threshold": "number?", "merge_strategy": "string:keep_newer|keep_larger|combine?",
        "min_quality_score": "integer?", "confidence_filter": "string:high|medium|low|none?",
        "age_days": "number?", "min_age_days": "number?", "max_hits": "integer?",
        "min_similarity": "number?", "max_similarity": "number?", "dry_run": "boolean?", "limit": "integer?",
    }),
    "EpisodeRecord": ("Record an episode", "", {
        "name": "string", "outcome": "string:success|failure|blocked|ongoing", "summary": "string",
        "tags": "array[string]?", "session_id": "string?",
    }),
    "EpisodeList": ("List recent episodes", "RI", {
        "outcome": "string:success|failure|blocked|ongoing?", "tag": "string?", "since": "string?", "limit": "integer?",
    }),
    "ThreadAppend": ("Append to a working-memory thread", "", {
        "thread": "string", "role": "string:user|assistant|system|tool", "content": "string", "chunk_type": "string?",
        "retention": "string:critical|compressible|batch-compressible|disposable|ephemeral?",
        "importance": "number?", "call_id": "string?",
    }),
    "ThreadContext": ("Assemble a thread's context", "RI", {"thread": "string", "budget_tokens": "integer", "query": "string?"}),
    "ThreadControl": ("Control a working-memory thread", "D", {
        "thread": "string", "action": "string:strategy|mode|step|compact|pause|resume|fork|state|ref|unref",
        "value": "string?",
    }),
    "ThreadList": ("List working-memory threads", "RI", {}),
    "LoadSkill": ("Load skill", "I", {"file_path": "string"}),
    "Read": ("Read workspace file", "RI", {"file_path": "string", "offset": "integer?", "limit": "integer?"}),
    "Write": ("Write workspace file", "DI", {"file_path": "string", "content": "string"}),
    "Edit": ("Edit workspace file", "D", {
        "file_path": "string", "old_string": "string", "new_string": "string", "replace_all": "boolean?",
    }),
    "Glob": ("Find workspace files", "RI", {"pattern": "string", "path": "string?"}),
    "Grep": ("Search workspace files", "RI", {
        "pattern": "string", "path": "string?", "glob": "string?", "case_insensitive": "boolean?",
        "output_mode": "string:files_with_matches|content|count?",
    }),
    "Bash": ("Run shell command", "DO", {"command": "string", "timeout": "number?"}),
}

WORKSPACE = ["Read", "Write", "Edit", "Glob", "Grep", "Bash"]
RETRIEVAL = ["MemoryRead", "MemoryGlob", "MemoryGrep", "MemorySearch", "MemoryDiscover", "MemoryGraph", "ThreadList"]
THREADS = ["ThreadAppend", "ThreadContext", "ThreadControl", "ThreadList"]
ASSISTANT = [*RETRIEVAL[:-1], "MemoryWrite", "MemoryEdit", "MemoryLink", "MemoryUnlink", *THREADS, "LoadSkill", *WORKSPACE]


def installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


RESEARCHER = [
    *RETRIEVAL[:-1], "MemoryWrite", "MemoryEdit", "MemoryLink", "MemoryUnlink", *THREADS, "MemoryDelete",
    *(["MemoryDefrag"] if installed("memdir.tools.memory_defrag") else []),
    *(["EpisodeRecord"] if installed("memdir.tools.episode_record") else []),
    *(["EpisodeList"] if installed("memdir.tools.episode_list") else []),
    "LoadSkill", *WORKSPACE,
]


def shape(schema: dict, name: str, required: set[str]) -> str:
    prop = schema[name]
    kind = prop.get("type")
    if "enum" in prop:
        text = f"{kind}:{'|'.join(prop['enum'])}"
    elif kind == "array":
        text = f"array[{prop['items'].get('type')}]"
    else:
        text = kind
    return text + ("" if name in required else "?")


def hints(annotations) -> str:
    flags = (annotations.read_only_hint, annotations.destructive_hint, annotations.idempotent_hint, annotations.open_world_hint)
    return "".join(code for code, flag in zip("RDIO", flags) if flag)


def tools_of(mode: str, tmp_path):
    server = build_server(Settings(root=tmp_path / "memory", mode=mode))
    return anyio.run(server.list_tools)


@pytest.mark.parametrize(("mode", "expected"), [("retrieval", RETRIEVAL), ("assistant", ASSISTANT), ("researcher", RESEARCHER)])
def test_each_mode_registers_exactly_its_tools(mode, expected, tmp_path):
    assert [tool.name for tool in tools_of(mode, tmp_path)] == expected


@pytest.mark.parametrize("mode", ["retrieval", "assistant", "researcher"])
def test_every_tool_matches_the_contract(mode, tmp_path):
    for tool in tools_of(mode, tmp_path):
        title, annotation_codes, params = CONTRACT[tool.name]
        schema = tool.input_schema
        required = set(schema.get("required", []))
        assert (tool.title, hints(tool.annotations)) == (title, annotation_codes), tool.name
        assert {name: shape(schema["properties"], name, required) for name in schema["properties"]} == params, tool.name
        assert tool.annotations.open_world_hint is not None, f"{tool.name}: every hint is stated explicitly"


@pytest.mark.parametrize("mode", ["retrieval", "assistant", "researcher"])
def test_every_tool_and_parameter_is_described_for_the_model(mode, tmp_path):
    for tool in tools_of(mode, tmp_path):
        assert len(tool.description or "") > 40, tool.name
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"


def test_retrieval_is_read_only_and_has_no_skills(tmp_path):
    tools = tools_of("retrieval", tmp_path)
    assert all(tool.annotations.read_only_hint for tool in tools)
    assert "LoadSkill" not in {tool.name for tool in tools}


def test_mode_table():
    assert list(MODE_TOOLS) == ["retrieval", "assistant", "researcher"]
    with pytest.raises(ValueError, match="Unknown memory mode 'chat'"):
        tools_for_mode("chat")


def test_array_parameters_also_accept_json_strings_and_comma_lists(tmp_path):
    server = build_server(Settings(root=tmp_path / "memory"))
    server.register_tool("MemoryWrite")  # (done at its first call)
    tool = server._tool_manager.get_tool("MemoryWrite")  # the SDK's validation step, without a client
    base = {"file_path": "fact/a.md", "content": "x", "title": "t", "type": "fact", "related": [], "domain": "d"}
    for tags in (["a", "b"], '["a", "b"]', "a, b"):
        validated = tool.fn_metadata.validate_arguments({**base, "tags": tags})
        assert validated["tags"] in (["a", "b"], "a, b")  # the tool's coercion finishes the job


def test_missing_and_mistyped_arguments_are_named_with_what_they_are_for(tmp_path):
    from mcp.server.mcpserver.exceptions import ToolError

    server = build_server(Settings(root=tmp_path / "memory"))
    arguments = {"file_path": "fact/a.md", "content": "x", "title": "t", "type": "fact", "tags": []}
    with pytest.raises(ToolError) as raised:
        anyio.run(server.call_tool, "MemoryWrite", arguments)
    message = str(raised.value)
    assert message.startswith("Invalid arguments for MemoryWrite:\n- related: missing (required). It is: paths of related")
    assert "\n- domain: missing (required). It is: a category" in message
    assert message.endswith("every required parameter: file_path, content, title, type, tags, related, domain.")
    assert "pydantic" not in message and "input_value" not in message

    with pytest.raises(ToolError, match=r"- case_insensitive: Input should be a valid boolean"):
        anyio.run(server.call_tool, "MemoryGrep", {"pattern": "x", "case_insensitive": "perhaps"})


def test_an_argument_the_tool_does_not_take_is_refused_not_ignored(tmp_path):
    from mcp.server.mcpserver.exceptions import ToolError

    server = build_server(Settings(root=tmp_path / "memory", mode="researcher"))
    with pytest.raises(ToolError) as raised:
        anyio.run(server.call_tool, "MemoryDefrag", {"action": "find_duplicates", "threshold": "high"})
    message = str(raised.value)
    assert message.startswith("MemoryDefrag does not take 'threshold', so nothing would use it.")
    assert "similarity_threshold" in message  # the names it does take
