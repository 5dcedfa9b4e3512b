"""LoadSkill's logic: validation with SwarmMemory's messages, the loaded text, and the toolset reminder."""

from __future__ import annotations

import pytest

from memdir.core.errors import EntryNotFoundError, InputValidationError
from memdir.core.settings import Settings
from memdir.memory import Memory
from memdir.tools.load_skill import SkillLoad, load_skill, toolset_reminder
from tests.fakes import FakeEmbedder

SKILL = "# Debug API errors\n\n1. Read the logs.\n2. Run the failing request."
SKILL_META = {
    "type": "skill",
    "tools": ["Read", "Edit", "Bash", "Read"],
    "permissions": {"Bash": {"allowed_commands": ["^curl "]}},
}


@pytest.fixture
def memory(tmp_path):
    store = Memory.open(Settings(root=tmp_path / "memory"), embedder=FakeEmbedder())
    store.write("skill/debugging/api-errors.md", SKILL, title="Debug API errors", metadata=SKILL_META)
    yield store
    store.close()


def test_loads_a_skill(memory, session):
    load = load_skill(memory, session, "skill/debugging/api-errors")
    assert load == SkillLoad(
        path="skill/debugging/api-errors.md",
        title="Debug API errors",
        content="     1 # Debug API errors\n     2 \n     3 1. Read the logs.\n     4 2. Run the failing request.",
        tools=["Read", "Edit", "Bash"],
        permissions={"Bash": {"allowed_commands": ["^curl "]}},
        about="Debug API errors\n# Debug API errors\n\n1. Read the logs.\n2. Run the failing request.",
    )
    assert load.text == (
        "Loaded skill: Debug API errors\n\n"
        "     1 # Debug API errors\n     2 \n     3 1. Read the logs.\n     4 2. Run the failing request."
    )


def test_registers_the_read_and_counts_a_hit(memory, session):
    load_skill(memory, session, "memory://skill/debugging/api-errors.md")
    assert session.tracker.is_current("skill/debugging/api-errors", SKILL)
    assert memory.read("skill/debugging/api-errors.md").hits == 1


def test_does_not_change_the_sessions_toolset_itself(memory, session):
    load = load_skill(memory, session, "skill/debugging/api-errors.md")
    assert not session.has_skill
    session.activate_skill(load.path, load.tools, load.permissions)
    assert (session.skill_path, session.skill_tools, session.skill_permissions) == (
        "skill/debugging/api-errors.md", ["Read", "Edit", "Bash"], {"Bash": {"allowed_commands": ["^curl "]}},
    )
    session.activate_skill("skill/other.md", ["Grep"], {})
    assert session.skill_tools == ["Grep"]  # replaces, never adds up
    session.clear_skill()
    assert (session.skill_path, session.skill_tools, session.skill_permissions) == (None, [], {})


def test_path_must_be_under_skill(memory, session):
    memory.write("concept/debugging.md", "x", title="X", metadata={"type": "skill"})
    with pytest.raises(InputValidationError) as caught:
        load_skill(memory, session, "concept/debugging.md")
    assert caught.value.message == "Skills must be stored in skill/ hierarchy. Got: concept/debugging.md"


def test_entry_must_be_of_type_skill(memory, session):
    memory.write("skill/notes.md", "x", title="Notes", metadata={"type": "fact"})
    with pytest.raises(InputValidationError) as caught:
        load_skill(memory, session, "skill/notes.md")
    assert caught.value.message == "memory://skill/notes.md is not a skill (type: fact)"


def test_an_entry_without_a_declared_type_under_skill_is_a_skill(memory, session):
    memory.write("skill/untyped.md", "Steps: first this, then that.", title="Untyped")  # e.g. written by hand
    loaded = load_skill(memory, session, "skill/untyped")
    assert (loaded.path, loaded.tools) == ("skill/untyped.md", [])


def test_missing_skill(memory, session):
    with pytest.raises(EntryNotFoundError):
        load_skill(memory, session, "skill/nope.md")


def test_unavailable_tool_is_refused_when_the_server_says_what_exists(memory, session):
    with pytest.raises(InputValidationError) as caught:
        load_skill(memory, session, "skill/debugging/api-errors.md", available_tools={"Read", "Edit", "Grep"})
    assert caught.value.message == (
        "Skill requires tool 'Bash' but it's not available for this agent. Available tools: Edit, Grep, Read"
    )
    load = load_skill(memory, session, "skill/debugging/api-errors.md", available_tools={"Read", "Edit", "Bash"})
    assert load.tools == ["Read", "Edit", "Bash"]


def test_built_in_skill_loads(memory, session):
    load = load_skill(memory, session, "skill/meta/deep-learning")
    assert load.title == "Deep Learning Protocol"
    assert load.tools == [] and load.permissions == {}
    assert load.text.startswith("Loaded skill: Deep Learning Protocol\n\n     1 # Deep Learning Protocol\n")


def test_untitled_skill(memory, session):
    memory.write("skill/bare.md", "step", title="", metadata={"type": "skill"})
    assert load_skill(memory, session, "skill/bare.md").text.startswith("Loaded skill: ")


def test_toolset_reminder_is_the_seeds_format():
    assert toolset_reminder(
        ["Read", "Edit", "Bash"],
        ["MemoryWrite", "Read", "MemoryRead", "Edit", "Bash", "LoadSkill", "MemoryEdit", "Read"],
    ) == (
        "<system-reminder>\n"
        "Your available tools have been updated.\n"
        "\n"
        "New tools loaded from skill:\n"
        "  - Read\n"
        "  - Edit\n"
        "  - Bash\n"
        "\n"
        "Your complete toolset is now:\n"
        "  - Bash\n"
        "  - Edit\n"
        "  - LoadSkill\n"
        "  - MemoryEdit\n"
        "  - MemoryRead\n"
        "  - MemoryWrite\n"
        "  - Read\n"
        "\n"
        "Only use tools from this list.\n"
        "</system-reminder>"
    )


def test_toolset_reminder_without_new_tools():
    assert toolset_reminder([], ["LoadSkill", "MemoryRead"]) == (
        "<system-reminder>\n"
        "Your available tools have been updated.\n"
        "\n"
        "New tools loaded from skill:\n"
        "  (none)\n"
        "\n"
        "Your complete toolset is now:\n"
        "  - LoadSkill\n"
        "  - MemoryRead\n"
        "\n"
        "Only use tools from this list.\n"
        "</system-reminder>"
    )


@pytest.mark.parametrize(
    ("permissions", "message"),
    [
        ({"Write": {"deny_paths": ["secrets/**"]}}, "'deny_paths', which Write does not apply"),
        ({"Bash": {"denied_paths": ["x"]}}, "'denied_paths', which Bash does not apply"),
        ({"Teleport": {"allowed_paths": ["x"]}}, "'Teleport', which is not a workspace tool"),
        ({"Bash": "yes"}, "permissions.Bash must be a mapping"),
        ({"Bash": {"allowed_commands": ["(["]}}, "not a valid regular expression"),
    ],
)
def test_permissions_memdir_would_not_apply_as_written_are_refused_when_written(memory, session, permissions, message):
    from memdir.tools.memory_write import memory_write

    with pytest.raises(InputValidationError, match=message):
        memory_write(memory, session, "skill/x", "Do it.", "X", "skill", [], [], None, tools=["Write", "Bash"],
                     permissions=permissions)
    assert not memory.exists("skill/x")


@pytest.mark.directory_store  # edits the files by hand
def test_a_skill_whose_permissions_cannot_be_read_does_not_load(memory, session):
    """Fail closed: dropping unreadable permissions would run the skill without its restrictions."""
    memory.write("skill/locked.md", "Edit files.", title="Locked", metadata={"type": "skill", "tools": ["Write"]})
    yml = memory.root / "skill" / "locked.yml"
    yml.write_text(yml.read_text().replace("  type: skill\n", "  type: skill\n  permissions:\n  - 1\n  - 2\n"))
    with pytest.raises(InputValidationError, match="permissions in its .yml file are not a mapping"):
        load_skill(memory, session, "skill/locked")
