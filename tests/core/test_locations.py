"""The hook's fast path reads root, agent and mode without pydantic: it must agree with `Settings`."""

from __future__ import annotations

import pytest

from memdir.core.settings import Settings
from memdir.launch import _settings


@pytest.mark.parametrize(("env", "toml", "options"), [
    ({}, "", {}),
    ({"MEMDIR_ROOT": "/srv/mem"}, "", {}),
    ({"memdir_root": "/srv/lower"}, "", {}),
    ({}, 'root = "/from/toml"\nagent = "bob"\nmode = "retrieval"\n', {}),
    ({"MEMDIR_AGENT": "alice"}, 'root = "/from/toml"\nagent = "bob"\n', {}),
    ({"MEMDIR_ROOT": "/srv/mem"}, "", {"--root": "relative/dir", "--agent": "carol", "--mode": "researcher"}),
    ({"MEMDIR_ROOT": "~/mem"}, "", {}),
])
def test_quick_settings_agree_with_settings(tmp_path, monkeypatch, env, toml, options):
    monkeypatch.delenv("MEMDIR_ROOT", raising=False)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")  # the workspace; the user's config file lies outside it, owner-only
    config = tmp_path / "config" / "memdir.toml"
    config.parent.mkdir()
    config.write_text(toml)
    config.chmod(0o600)
    monkeypatch.setenv("MEMDIR_CONFIG", str(config))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    full = Settings(root=options.get("--root"), agent=options.get("--agent"), mode=options.get("--mode")) if options \
        else Settings()
    store_root, mode, timeout = _settings(options)
    assert (store_root, mode, timeout) == (full.store_root, full.server.mode, full.server.hook_socket_timeout)


def test_the_working_directorys_file_is_read_over_the_users_for_plain_settings(tmp_path, monkeypatch):
    config = tmp_path / "config" / "memdir.toml"
    config.parent.mkdir()
    config.write_text('root = "/from/user"\nagent = "bob"\nmode = "retrieval"\n')
    config.chmod(0o600)
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "memdir.toml").write_text('mode = "researcher"\n')
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.delenv("MEMDIR_ROOT")
    monkeypatch.delenv("MEMDIR_CONFIG")
    monkeypatch.setattr("platformdirs.user_config_dir", lambda name: str(config.parent))
    full = Settings()
    assert (full.roles.agent, full.server.mode, str(full.storage.root)) == ("bob", "researcher", "/from/user")
    store_root, mode, _ = _settings({})
    assert (store_root, mode) == (full.store_root, full.server.mode)


@pytest.mark.parametrize(("env", "toml"), [
    ({"MEMDIR_HOOK_SOCKET": "false"}, ""),            # the socket is turned off
    ({}, "hook_socket = false\n"),
    ({}, "this is not toml ["),                       # the CLI explains a broken file
    ({"MEMDIR_AGENT": "../up"}, ""),                  # ... and a bad agent name
    ({"MEMDIR_HOOK_SOCKET_TIMEOUT": "soon"}, ""),
])
def test_anything_doubtful_leaves_it_to_settings(tmp_path, monkeypatch, env, toml):
    monkeypatch.setenv("MEMDIR_CONFIG", str(tmp_path / "memdir.toml"))
    (tmp_path / "memdir.toml").write_text(toml)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert _settings({}) is None
