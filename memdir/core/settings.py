"""memdir's configuration: where each value comes from, and the object that holds them all.

Values come, highest priority first, from: keyword arguments, ``MEMDIR_*`` environment
variables (SwarmMemory's ``SWARM_MEMORY_*`` names are accepted as aliases where one
existed), ``./memdir.toml``, the user's config file, then the defaults. The user's file is
the one named by ``MEMDIR_CONFIG`` (then the only file read), else ``memdir.toml`` in the
user config dir. Every source names a setting by its one flat name (``semantic_weight = 0.6``
in TOML, ``MEMDIR_SEMANTIC_WEIGHT``, ``Settings(semantic_weight=0.6)``); the value is filed
under its section (``settings.search.semantic_weight``, see `memdir.core.sections`).
`Settings.__init__` layers the sources itself, in plain pydantic: each has memdir's own
rules, and a settings library would add only its import to every start.

The settings that widen privileges (`memdir.core.locations.PRIVILEGED`: admin, allow_bash,
the workspace, identity, tokens, who may connect) are refused in ``./memdir.toml``, which an
agent's workspace tools may write, and taken from the user's file only when that file is the
user's own and owner-only (``chmod 600``) and lies outside the workspace and the memory root.
"""

from __future__ import annotations

import json
import os
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self, get_origin

from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo

from memdir.core.errors import ConfigError
from memdir.core.locations import PRIVILEGED, config_file, project_config_file
from memdir.core.sections import (
    DiscoverySettings,
    EmbeddingsSettings,
    EpisodesSettings,
    EvolutionSettings,
    LimitsSettings,
    RolesSettings,
    SearchSettings,
    Section,
    ServerSettings,
    StorageSettings,
    ThreadsSettings,
)
from memdir.core.suggest import did_you_mean

SWARM_WEIGHTS = frozenset({"semantic_weight", "keyword_weight"})
MEMDIR_WEIGHTS = frozenset({"bm25_weight", "tag_weight", "context_weight", "graph_weight", "importance_weight",
                            "role_importance_weight", "recency_weight"})
"""The weights of the signals memdir adds to SwarmMemory's two (see `Settings.swarm_formula`)."""

ENV_PREFIXES = ("memdir_", "swarm_memory_")

NOT_FROM_ENVIRONMENT = frozenset({"admin"})
"""Settings never read from the environment: every process a server starts inherits it, so an
admin variable would make each agent below it an admin. ``admin`` comes from memdir.toml or
the command line's ``--admin`` only."""


class Settings(BaseModel):
    """memdir's configuration, one section per part of the system (see the module docstring for
    where values come from). ``Settings(word_limit=10)`` takes setting names, as every source does."""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    storage: StorageSettings = Field(default_factory=StorageSettings)
    roles: RolesSettings = Field(default_factory=RolesSettings)
    embeddings: EmbeddingsSettings = Field(default_factory=EmbeddingsSettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    discovery: DiscoverySettings = Field(default_factory=DiscoverySettings)
    episodes: EpisodesSettings = Field(default_factory=EpisodesSettings)
    threads: ThreadsSettings = Field(default_factory=ThreadsSettings)
    evolution: EvolutionSettings = Field(default_factory=EvolutionSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)

    def __init__(self, **values: Any) -> None:
        """The settings from every source, ``values`` (by setting name) over all the others."""
        given = _filed(values, "a keyword argument")
        project, user = TomlFile(project_config_file(), trusted=False), TomlFile(config_file(), trusted=True)
        super().__init__(**_layered(given, _environment(), project.values(), user.values()))
        self._check_privileges_from_outside(user)

    def with_values(self, **values: Any) -> Settings:
        """A copy with some settings (by setting name) changed, as the command line changes them."""
        sections: dict[str, Section] = {}
        for name, value in values.items():
            section, field = SETTING_FIELDS[name]
            current = sections.get(section) or getattr(self, section)
            sections[section] = current.model_copy(update={field: value})
        return self.model_copy(update=sections)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with whole sections replaced. A setting's name (``root``) is no attribute here:
        pydantic would set it beside the sections, where nothing reads it; `with_values` files it."""
        unknown = sorted(set(update or ()) - set(type(self).model_fields))
        if unknown:
            raise ConfigError(f"Not a section of the settings: {', '.join(unknown)}.",
                              "Change settings by their names with Settings.with_values(name=value).")
        return super().model_copy(update=update, deep=deep)

    @property
    def swarm_formula(self) -> bool:
        """True when only SwarmMemory's two weights (``semantic_weight``, ``keyword_weight``) are
        set and no other signal's: search then scores ``semantic * cosine + keyword * tag share``,
        SwarmMemory's formula (its keyword score is the share of the query's keywords in the
        entry's tags), and the signals memdir adds (BM25, idf coverage, context, role importance)
        stay out. Setting any of their weights combines them with the two again."""
        chosen = self.search.model_fields_set | self.roles.model_fields_set
        return bool(chosen & SWARM_WEIGHTS) and not chosen & MEMDIR_WEIGHTS

    @property
    def model_wanted(self) -> str | None:
        """The model name resolution looks for: ``model``, except that an explicit ``model_dir``
        names its own model (from its path) unless ``model`` was configured as well — so a
        custom model is never labelled, and its vectors never mixed, as all-MiniLM-L6-v2's."""
        embeddings = self.embeddings
        if embeddings.model_dir is not None and "model" not in embeddings.model_fields_set:
            return None
        return embeddings.model

    @property
    def store_root(self) -> Path:
        """The directory this process's entries live in: the root, or the agent's own store under it
        (an agent alone; one with a role, or ``shared_store``, is on a team that shares the root)."""
        root = self.storage.root.expanduser()
        roles = self.roles
        if roles.agent and roles.role is None and not roles.shared_store:
            return root / "agents" / roles.agent
        return root

    def _check_privileges_from_outside(self, user: TomlFile) -> None:
        """Privileged settings only from a config file no agent's tools reach: outside the
        workspace (the workspace tools write there) and the memory root (the memory tools do).
        A workspace at the filesystem root (a desktop app starting memdir in ``/``) does not
        count: the workspace tools refuse to act there at all."""
        privileged, path = user.privileged, user.path
        if not privileged or path is None:
            return
        workspace = self.server.workspace.expanduser().resolve()
        folders = [(self.storage.root, "memory root")]
        if workspace != Path(workspace.anchor):
            folders.append((workspace, "workspace"))
        for folder, name in folders:
            if _inside(path, folder):
                raise ConfigError(
                    f"{path} sets {', '.join(privileged)}, but it lies inside the {name} {folder}, "
                    "where an agent's tools can write it.",
                    "Move it out (e.g. to the user config dir, or point MEMDIR_CONFIG at a file elsewhere), "
                    "or give those settings on the command line.",
                )


def _setting_fields() -> dict[str, tuple[str, str]]:
    """Each setting name -> (its section, its field there)."""
    found: dict[str, tuple[str, str]] = {}
    for section, info in Settings.model_fields.items():
        model = info.annotation
        assert isinstance(model, type) and issubclass(model, BaseModel)
        for field, spec in model.model_fields.items():
            found[spec.alias or field] = (section, field)
    return found


SETTING_FIELDS = _setting_fields()
"""Every setting name (the one the environment, TOML files and command line use) -> (section, field)."""


def setting_info(name: str) -> FieldInfo:
    """The declaration of the setting called ``name`` (default, description, type)."""
    section, field = SETTING_FIELDS[name]
    model = Settings.model_fields[section].annotation
    assert isinstance(model, type) and issubclass(model, BaseModel)
    return model.model_fields[field]


def environment_names(name: str) -> tuple[str, ...]:
    """The environment variables that set the setting called ``name``."""
    if name in NOT_FROM_ENVIRONMENT:
        return ()
    extra = setting_info(name).json_schema_extra
    swarm = extra.get("swarm") if isinstance(extra, dict) else None
    return (f"MEMDIR_{name.upper()}", *([str(swarm)] if swarm else []))


def _filed(values: Mapping[str, Any], where: str, *, whole_sections: bool = True) -> dict[str, Any]:
    """Values by setting name, filed under their sections; with ``whole_sections``, a section given
    whole (``storage=StorageSettings(...)``) passes as it is."""
    filed: dict[str, Any] = {}
    unknown = []
    for name, value in values.items():
        if whole_sections and name in Settings.model_fields:
            filed[name] = value
        elif name in SETTING_FIELDS:
            section, _ = SETTING_FIELDS[name]
            filed.setdefault(section, {})[name] = value
        else:
            unknown.append(name)
    if unknown:
        guesses = " ".join(f"{key!r}:{did_you_mean(key, SETTING_FIELDS) or ' no setting is close.'}" for key in unknown)
        raise ConfigError(
            f"{where}: unknown setting(s) {', '.join(map(repr, unknown))}.",
            f"{guesses} Every setting is listed in docs/configuration.md.",
        )
    return filed


def _layered(*layers: dict[str, Any]) -> dict[str, Any]:
    """The sources' values (each filed by section), highest priority first, merged: a value
    given by a higher source wins; sections given as tables merge setting by setting."""
    merged: dict[str, Any] = {}
    for layer in reversed(layers):
        merged = _merged(merged, layer)
    return merged


def _merged(lower: dict[str, Any], higher: dict[str, Any]) -> dict[str, Any]:
    merged = dict(lower)
    for key, value in higher.items():
        below = merged.get(key)
        merged[key] = _merged(below, value) if isinstance(below, dict) and isinstance(value, dict) else value
    return merged


def _environment() -> dict[str, Any]:
    """The environment's ``MEMDIR_<NAME>`` and ``SWARM_MEMORY_*`` variables, by setting name.

    Only those prefixes count: plain ``MODEL``, ``MODE`` or ``ROOT`` belong to other programs.
    A list or tuple setting is given as JSON (``MEMDIR_HTTP_ALLOWED_HOSTS='["a.example"]'``).
    """
    environment = {name.upper(): value for name, value in os.environ.items() if name.lower().startswith(ENV_PREFIXES)}
    found: dict[str, Any] = {}
    for name in SETTING_FIELDS:
        for variable in environment_names(name):
            if variable in environment:
                found[name] = _decoded(name, variable, environment[variable])
                break
    return _filed(found, "the environment")


def _decoded(name: str, variable: str, text: str) -> Any:
    """A variable's text as its setting takes it: JSON for a list or tuple, else the text (pydantic converts it)."""
    if get_origin(setting_info(name).annotation) not in (tuple, list, dict):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{variable} is not valid JSON: {exc}.", f'Give it as a JSON list, e.g. {variable}=\'["a", "b"]\'.') from exc


class TomlFile:
    """A ``memdir.toml``, refusing a file that is not TOML and keys that are no setting (a
    misspelt key would otherwise be ignored without a word, and the user would wonder why
    the setting never took), and privileged settings where they may not come from.

    ``trusted``: the user's own config file, which may hold privileged settings if only its
    owner may change or read it; else the working directory's, which may hold none. A file
    that does not exist gives no values.
    """

    def __init__(self, path: Path | None, trusted: bool) -> None:
        self.path = path
        self.trusted = trusted
        self.data: dict[str, Any] = {}
        found = path.expanduser() if path is not None else None
        if found is None or not found.is_file():
            return
        try:
            with found.open("rb") as handle:
                self.data = tomllib.load(handle)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}.", "Fix the file, or point MEMDIR_CONFIG elsewhere.") from exc

    @property
    def privileged(self) -> list[str]:
        """The privileged settings the file holds."""
        return sorted(PRIVILEGED.intersection(self.data))

    def values(self) -> dict[str, Any]:
        """The file's settings, filed by section."""
        data, privileged = self.data, self.privileged
        if privileged and not self.trusted:
            raise ConfigError(
                f"{self.path} sets {', '.join(privileged)}, which widen what clients may do; a file in the "
                "working directory may have been written by an agent, so memdir does not take them from it.",
                f"Remove them there, and put them in your own config file {config_file()} (chmod 600), "
                "or give them on the command line.",
            )
        if privileged:
            _check_owner_only(Path(str(self.path)), privileged)
        return _filed(data, str(self.path), whole_sections=False)


def _check_owner_only(path: Path, privileged: list[str]) -> None:
    """Refuse privileged settings from a file that someone else may change or read."""
    status = path.stat()
    if status.st_uid != os.getuid() or status.st_mode & 0o077:
        raise ConfigError(
            f"{path} sets {', '.join(privileged)}, but other users may change or read it "
            f"(owner uid {status.st_uid}, mode {stat.filemode(status.st_mode)}).",
            f"Make it yours and owner-only (`chmod 600 {path}`), or give those settings on the command line.",
        )


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve().is_relative_to(folder.expanduser().resolve())
