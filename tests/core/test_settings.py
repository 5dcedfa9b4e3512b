"""Settings: one object, read from kwargs > MEMDIR_* / SWARM_MEMORY_* env > memdir.toml > defaults."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from memdir.cli import app
from memdir.core.errors import ConfigError
from memdir.core.settings import SETTING_FIELDS, Settings, environment_names, setting_info
from memdir.search.thresholds import threshold_for


def test_defaults_match_swarm_memory():
    settings = Settings()
    assert settings.search.relevance_semantic_weight == 0.5  # the fusion weights: tuned on LoCoMo, see hybrid.py
    assert (settings.discovery.threshold, settings.discovery.threshold_short) == (0.35, 0.25)
    assert settings.discovery.adaptive_word_cutoff == 10
    assert settings.embeddings.max_chars == 1200
    assert settings.storage.max_entry_size == 3_000_000
    assert settings.limits.word_limit == 250


def test_memdir_env_variables(monkeypatch):
    monkeypatch.setenv("MEMDIR_SEMANTIC_WEIGHT", "0.7")
    monkeypatch.setenv("MEMDIR_ROOT", "/tmp/somewhere")
    settings = Settings()
    assert settings.search.semantic_weight == 0.7
    assert settings.storage.root == Path("/tmp/somewhere")


@pytest.mark.parametrize(
    ("swarm_name", "field", "value", "expected"),
    [
        ("SWARM_MEMORY_KEYWORD_WEIGHT", "keyword_weight", "0.3", 0.3),
        ("SWARM_MEMORY_EMBEDDING_MAX_CHARS", "embedding_max_chars", "-1", -1),
        ("SWARM_MEMORY_DISCOVERY_THRESHOLD_SHORT", "discovery_threshold_short", "0.2", 0.2),
        ("SWARM_MEMORY_ADAPTIVE_WORD_CUTOFF", "adaptive_word_cutoff", "7", 7),
    ],
)
def test_swarm_memory_aliases(monkeypatch, swarm_name, field, value, expected):
    monkeypatch.setenv(swarm_name, value)
    section, name = SETTING_FIELDS[field]
    assert getattr(getattr(Settings(), section), name) == expected


def test_unprefixed_environment_variables_are_not_memdirs(monkeypatch, tmp_path):
    """MODEL, MODE, ROOT, WORKSPACE... belong to other programs; only MEMDIR_* and SWARM_MEMORY_* count."""
    for name, value in {"MODEL": "gpt-4o", "MODE": "debug", "ROOT": "/etc", "WORKSPACE": "/etc", "AGENT": "x"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MEMDIR_ROOT", str(tmp_path))
    settings = Settings()
    assert (settings.embeddings.model, settings.server.mode, settings.storage.root, settings.roles.agent) == (
        "sentence-transformers/all-MiniLM-L6-v2", "assistant", tmp_path, None,
    )
    assert settings.server.workspace != Path("/etc")


@pytest.mark.parametrize(
    ("text", "message"),
    [("semantic_wieght = 0.7\n", "unknown setting(s) 'semantic_wieght'"), ("semantic_weight = \n", "is not valid TOML")],
)
def test_a_config_file_memdir_cannot_use_is_a_clear_error(tmp_path, monkeypatch, text, message):
    from memdir.core.errors import ConfigError

    config = tmp_path / "memdir.toml"
    config.write_text(text)
    monkeypatch.setenv("MEMDIR_CONFIG", str(config))
    with pytest.raises(ConfigError, match=re.escape(message)) as raised:
        Settings()
    assert str(config) in raised.value.message and raised.value.hint


def test_a_mistyped_key_in_the_config_file_gets_the_setting_it_was_probably_meant_to_be(tmp_path, monkeypatch):
    config = tmp_path / "memdir.toml"
    config.write_text("semantc_weight = 0.7\nzzz = 1\n")
    monkeypatch.setenv("MEMDIR_CONFIG", str(config))
    result = CliRunner().invoke(app, ["status"])
    assert result.exit_code == 1
    assert "'semantc_weight': Did you mean 'semantic_weight'?" in result.output
    assert "'zzz': no setting is close." in result.output
    assert "hnsw_ef_search" not in result.output  # not a list of every setting


def test_toml_file_is_read_and_env_wins(tmp_path, monkeypatch):
    config = tmp_path / "memdir.toml"
    config.write_text('semantic_weight = 0.9\nkeyword_weight = 0.1\nword_limit = 100\n')
    monkeypatch.setenv("MEMDIR_CONFIG", str(config))
    monkeypatch.setenv("MEMDIR_KEYWORD_WEIGHT", "0.4")
    settings = Settings()
    assert settings.search.semantic_weight == 0.9
    assert settings.search.keyword_weight == 0.4
    assert settings.limits.word_limit == 100


def test_keyword_arguments_win(monkeypatch):
    monkeypatch.setenv("MEMDIR_WORD_LIMIT", "99")
    assert Settings(word_limit=10).limits.word_limit == 10


def test_a_copy_changes_settings_by_their_names_and_refuses_a_name_that_is_no_section(tmp_path):
    changed = Settings().with_values(root=tmp_path, prefetch_search=5)
    assert (changed.storage.root, changed.discovery.prefetch_search) == (tmp_path, 5)
    # pydantic would set ``root`` beside the sections, where nothing reads it: the copy would use the default root
    with pytest.raises(ConfigError, match="Not a section of the settings: root"):
        Settings().model_copy(update={"root": tmp_path})


def test_agent_gets_its_own_store(tmp_path):
    assert Settings(root=tmp_path).store_root == tmp_path
    assert Settings(root=tmp_path, agent="alice").store_root == tmp_path / "agents" / "alice"


def test_adaptive_threshold_for_short_and_long_queries():
    discovery = Settings().discovery
    assert threshold_for(discovery, "debug api errors") == 0.25
    assert threshold_for(discovery, "how do I debug the api errors that happen after the deploy today") == 0.35


@pytest.mark.parametrize("name", ["../x", ".hidden", "a/b", "", "a b"])
def test_agent_names_cannot_leave_the_root(name):
    with pytest.raises(ValueError, match="agent name"):
        Settings(agent=name)


def test_a_model_directory_names_its_own_model_unless_one_is_configured(tmp_path, monkeypatch):
    assert Settings().model_wanted == "sentence-transformers/all-MiniLM-L6-v2"
    assert Settings(model_dir=tmp_path / "acme-encoder").model_wanted is None  # named from its folder
    assert Settings(model_dir=tmp_path, model="acme/encoder").model_wanted == "acme/encoder"
    monkeypatch.setenv("MEMDIR_MODEL", "acme/other")
    assert Settings(model_dir=tmp_path).model_wanted == "acme/other"


# --------------------------------------------------------------------------- the README's settings table

_SETTINGS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
_UNITS = {"": 1, "MB": 1_000_000, "GB": 1_000_000_000, "s": 1}
_LEADING_VALUE = re.compile(r"(true|false|-?\d[\d_.,]*)\s*(MB|GB|s)?\b")


def _settings_table() -> list[tuple[list[str], list[str], str]]:
    """(setting names, environment variables, default text) of each row of docs/configuration.md's table."""
    lines = _SETTINGS_PAGE.read_text(encoding="utf-8").splitlines()
    start = lines.index("| setting | env | default |") + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        names, env, default = (cell.strip() for cell in line.strip("|").split("|", 2))
        rows.append(([name.strip() for name in names.split("/")], re.findall(r"`([A-Z_]+)`", env), default.strip()))
    return rows


def _documented_value(text: str) -> object:
    """The value a default cell states first (``3 MB`` -> 3000000, ``true`` -> True), or the text itself."""
    found = _LEADING_VALUE.match(text)
    if found is None:
        return text
    number, unit = found.groups()
    if number in ("true", "false"):
        return number == "true"
    return float(number.replace(",", "")) * _UNITS[unit or ""]


@pytest.mark.parametrize(("names", "env", "default"), _settings_table(), ids=lambda value: str(value)[:40])
def test_the_documented_settings_table_matches_the_code(names, env, default):
    """Every row names real settings, environment variables that set them, and their actual defaults."""
    assert all(name in SETTING_FIELDS for name in names), f"docs/configuration.md names an unknown setting in {names}"
    variables = {variable for name in names for variable in environment_names(name)}
    assert set(env) <= variables, f"{sorted(set(env) - variables)} do not set {names}"
    parts = default.split(" / ") if len(names) > 1 else [default]
    assert len(parts) == len(names)
    for name, part in zip(names, parts):
        actual = setting_info(name).default
        if isinstance(actual, bool):
            assert _documented_value(part) is actual, name
        elif isinstance(actual, (int, float)):
            assert _documented_value(part) == pytest.approx(actual), f"README says {name} = {part!r}; the code: {actual}"
        elif isinstance(actual, str):
            assert part.strip("`").startswith(actual), f"README says {name} = {part!r}; the code: {actual}"


def test_the_users_config_file_is_read_once(tmp_path, monkeypatch):
    """Its values and the check that its privileged settings lie outside the root come from one read."""
    import tomllib

    config = tmp_path / "memdir.toml"
    config.write_text('allow_bash = true\nword_limit = 100\n')
    config.chmod(0o600)
    monkeypatch.setenv("MEMDIR_CONFIG", str(config))
    reads: list[object] = []
    load = tomllib.load
    monkeypatch.setattr(tomllib, "load", lambda handle: reads.append(handle) or load(handle))
    assert Settings().limits.word_limit == 100
    assert len(reads) == 1
    monkeypatch.setenv("MEMDIR_ROOT", str(tmp_path))
    with pytest.raises(ConfigError, match="lies inside the memory root"):
        Settings()
