"""Bad store settings and export targets, through the CLI: a clear message, never a password, never
a traceback, and nothing written."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from memdir.cli import app

SECRET = "sekret-Pa55"


def memdir(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMDIR_EMBEDDINGS_ENABLED": "false"}
    return subprocess.run([sys.executable, "-m", "memdir", *args], check=False, capture_output=True, text=True, timeout=timeout,
                          env=env, stdin=subprocess.DEVNULL)


def refused(result: subprocess.CompletedProcess, *expected: str) -> str:
    shown = result.stdout + result.stderr
    assert result.returncode == 1, shown
    return refused_in(shown, *expected)


def refused_in(shown: str, *expected: str) -> str:
    assert "Traceback" not in shown and SECRET not in shown, shown
    for text in expected:
        assert text in shown, shown
    return shown


@pytest.mark.parametrize(("store", "expected"), [
    (f"postgresql://me:{SECRET}@127.0.0.1:1/db", "postgresql://me:***@127.0.0.1:1/db"),
    (f"postgresql://me@127.0.0.1:1/db?password={SECRET}", "?password=***"),
    (f"postgresql://me:{SECRET}@127.0.0.1:99999/db", "invalid port"),  # was a traceback
    (f"mysql://me:{SECRET}@db.example/db", "mysql://me:***@db.example/db"),
    (f"host=127.0.0.1 port=1 password={SECRET} dbname=db", "password=***"),
    (f"host=127.0.0.1 port=1 password='{SECRET}' dbname=db", "password='***'"),
])
def test_a_bad_store_is_refused_with_its_password_masked(store, expected, monkeypatch):
    monkeypatch.setenv("MEMDIR_EMBEDDINGS_ENABLED", "false")
    refused_in(cli_refused("status", "--store", store), expected)


def test_the_http_server_checks_its_store_before_it_starts(tmp_path):
    result = memdir("serve", "--http", "--port", "0", "--store", f"postgresql://me:{SECRET}@127.0.0.1:1/db", timeout=60)
    refused(result, "cannot be used", "postgresql://me:***@127.0.0.1:1/db")
    assert "serving MCP" not in result.stderr and not (tmp_path / "http-tokens.json").exists()


@pytest.mark.postgres
def test_a_store_that_opens_shows_no_password_either(pg_cluster, tmp_path):
    from memdir.core.settings import Settings
    from memdir.memory import Memory

    url = pg_cluster.fresh_url().replace("postgresql://memdir@", f"postgresql://memdir:{SECRET}@")  # trust auth
    Memory.open(Settings(root=tmp_path / "memory", store=url), load_model=False).close()  # the store's tables
    status = memdir("status", "--store", url, "--json")
    assert status.returncode == 0 and SECRET not in status.stdout + status.stderr and "memdir:***@" in status.stdout
    missing = pg_cluster.url(database="no_such_database").replace("postgresql://memdir@", f"postgresql://memdir:{SECRET}@")
    refused(memdir("serve", "--http", "--port", "0", "--store", missing, timeout=60), "no_such_database", "memdir:***@")


def cli_refused(*args: str) -> str:
    """Run a command in this process (typer's runner): refused with a message, no traceback."""
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), repr(result.exception)
    return result.output


def test_export_refuses_a_file_a_full_folder_and_a_folder_inside_the_root(tmp_path):
    root = tmp_path / "memory"
    (root / "fact").mkdir(parents=True)
    (root / "fact" / "a.md").write_text("Entry A.\n")
    file = tmp_path / "target.txt"
    file.write_text("keep me\n")
    refused_in(cli_refused("export", str(file), "--root", str(root)), "is a file, not a folder")  # was a traceback
    assert file.read_text() == "keep me\n"
    full = tmp_path / "photos"
    full.mkdir()
    (full / "cat.jpg").write_bytes(b"\xff\xd8")
    refused_in(cli_refused("export", str(full), "--root", str(root)), "is not empty (it holds cat.jpg)")
    assert sorted(path.name for path in full.iterdir()) == ["cat.jpg"]
    refused_in(cli_refused("export", str(root / "backup"), "--root", str(root)), "inside the memory root")
    assert not (root / "backup").exists()
    copied = CliRunner().invoke(app, ["export", str(tmp_path / "backup"), "--root", str(root)])
    assert copied.exit_code == 0, copied.output
    assert (tmp_path / "backup" / "fact" / "a.md").read_text() == "Entry A.\n"


@pytest.mark.postgres
def test_a_store_a_newer_memdir_upgraded_is_refused_and_left_as_it_is(pg_url, tmp_path):
    """A newer memdir's layout change (a column moved to another table, say) would make this version's
    statements fail with errors that say nothing of the cause: it refuses the store instead, reading
    or writing, and changes nothing in it."""
    import psycopg

    from memdir.core.settings import Settings
    from memdir.memory import Memory

    Memory.open(Settings(root=tmp_path / "memory", store=pg_url), load_model=False).close()  # the store's tables
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO memdir_migrations (name) VALUES ('9999_from_a_newer_memdir')")
        before = [conn.execute(f"SELECT count(*) FROM {table}").fetchone() for table in ("entries", "pg_tables")]
    entry = tmp_path / "a.md"
    entry.write_text("Entry A.\n")
    for command in (["read", "fact/a.md"], ["add", "fact/a.md", str(entry)]):
        refused(memdir(*command, "--root", str(tmp_path / "memory"), "--store", pg_url), "A newer version of memdir has upgraded this memory store",
                "9999_from_a_newer_memdir", "Upgrade memdir here")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert [conn.execute(f"SELECT count(*) FROM {table}").fetchone() for table in ("entries", "pg_tables")] == before
