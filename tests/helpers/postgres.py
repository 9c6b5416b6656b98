"""A private PostgreSQL cluster for tests: one per test session, a fresh database per test.

API (kept small; the REDIS lane's multi-process test uses it too):

- `selected()`: True when `PLATFORM_TEST_DATABASE=postgres` asks the suite to run on PostgreSQL.
- `cluster()`: the session's running `Cluster` (started on first use: initdb into a temp dir, a free port,
  the unix socket inside the temp dir; stopped at interpreter exit).
- `Cluster.database_for(data_dir)`: the database of a test server's data dir (tests/helpers/server.py uses
  it: a restart on the same data dir finds its data again).
- `Cluster.forget(data_dir)`: drop that database (the `server` fixture's teardown: disk and exit time).
- `Cluster.fresh_database()`: the URL (`postgresql://user@127.0.0.1:port/name`) of a new empty database,
  created from the cluster's template in milliseconds; `Cluster.drop(url)` drops it again.
- `Cluster.psql(sql, database=...)`: run SQL through the `psql` client and return its unaligned output.

The server refuses to run as root, so when the tests run as root the cluster belongs to the `postgres`
OS user (Debian's package creates it) and its commands run through `runuser`; otherwise it is the
caller's own. Binaries come from PATH or Debian's /usr/lib/postgresql/<version>/bin.
"""
from __future__ import annotations

import atexit
import glob
import itertools
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field

ENV_VAR = "PLATFORM_TEST_DATABASE"
ROLE = "platform"  # the role the server connects as (password-less over loopback: trust in pg_hba)


def selected() -> bool:
    return os.environ.get(ENV_VAR, "sqlite").strip().lower() in ("postgres", "postgresql")


def _debian_bins() -> list[str]:
    return sorted(glob.glob("/usr/lib/postgresql/*/bin"))


def _bin(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    candidates = [os.path.join(d, name) for d in _debian_bins() if os.path.exists(os.path.join(d, name))]
    if not candidates:
        raise RuntimeError(f"PostgreSQL's {name} is not installed (Debian: apt-get install -y postgresql)")
    return candidates[-1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_migrate(data_dir: str, database_url: str = "") -> None:
    """`platform-server migrate` in a process of its own, on `database_url` (empty: the data dir's SQLite file)."""
    env = {**os.environ, "PLATFORM_DATA_DIR": data_dir, "PLATFORM_DATABASE_URL": database_url, "PLATFORM_REDIS_URL": "",
           "PLATFORM_LOG_LEVEL": "WARNING"}
    done = subprocess.run([sys.executable, "-m", "platform_server", "migrate"], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"platform-server migrate failed: {done.stderr.strip() or done.stdout.strip()}")


@dataclass
class Cluster:
    root: str
    port: int
    os_user: str | None  # run the server's commands as this user (None: as ourselves)
    _names: itertools.count = field(default_factory=lambda: itertools.count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _by_dir: dict[str, str] = field(default_factory=dict)

    @property
    def data(self) -> str:
        return os.path.join(self.root, "data")

    def _run(self, argv: list[str], stdin: str | None = None) -> str:
        if self.os_user is not None:
            argv = ["runuser", "-u", self.os_user, "--", *argv]
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, cwd=self.root)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip() or done.stdout.strip()}")
        return done.stdout

    def psql(self, sql: str, database: str = "postgres") -> str:
        return self._run(
            [_bin("psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", self.root,
             "-p", str(self.port), "-U", ROLE, "-d", database, "-c", sql]
        )

    def url(self, database: str) -> str:
        return f"postgresql://{ROLE}@127.0.0.1:{self.port}/{database}"

    def fresh_database(self) -> str:
        """A new empty database (a copy of `template_platform`, which stays empty so the copy is instant)."""
        with self._lock:
            name = f"t{os.getpid()}_{next(self._names)}"
        self.psql(f'CREATE DATABASE "{name}" TEMPLATE template_platform')
        return self.url(name)

    def migrated_database(self) -> str:
        """A new database with every migration applied and no rows of a server's own (a copy of
        `template_migrated`): a test server skips the ~0.3 s of migrations that each start paid on an empty one."""
        with self._lock:
            name = f"t{os.getpid()}_{next(self._names)}"
        self.psql(f'CREATE DATABASE "{name}" TEMPLATE template_migrated')
        return self.url(name)

    def database_for(self, data_dir: str) -> str:
        """The database of a test server's data dir: fresh (migrated) the first time, the same one when the test
        restarts a server on that data dir (what it wrote is still there, as with the SQLite file)."""
        key = os.path.realpath(data_dir)
        with self._lock:
            known = self._by_dir.get(key)
        if known is None:
            known = self.migrated_database()
            with self._lock:
                self._by_dir[key] = known
        return known

    def forget(self, data_dir: str) -> None:
        """Drop the database of a test server's data dir once its test is over. Kept, they piled up (a
        migrated database is ~18 MB in ~1,000 files), and removing the cluster's folder at exit took
        215 s of a 98-test run at load 11."""
        with self._lock:
            url = self._by_dir.pop(os.path.realpath(data_dir), None)
        if url is not None:
            self.drop(url)

    def drop(self, url: str) -> None:
        name = url.rsplit("/", 1)[1]
        self.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def start(self) -> None:
        os.makedirs(self.data)
        if self.os_user is not None:
            shutil.chown(self.root, self.os_user)
            shutil.chown(self.data, self.os_user)
        self._run([_bin("initdb"), "-D", self.data, "-U", ROLE, "-A", "trust", "-E", "UTF8", "--no-sync"])
        # fsync off and a small footprint: a throwaway cluster on a shared 2-core machine
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=32MB "
            "-c max_connections=200"
        )
        log = os.path.join(self.root, "server.log")
        self._run([_bin("pg_ctl"), "-D", self.data, "-l", log, "-o", options, "-w", "-t", "60", "start"])
        self.psql("CREATE DATABASE template_platform")
        self._migrate_template()

    def _migrate_template(self) -> None:
        """`template_migrated`: migrated once, in a process of its own so that no connection is left on the
        template (a database being accessed cannot be copied)."""
        self.psql("CREATE DATABASE template_migrated TEMPLATE template_platform")
        scratch = tempfile.mkdtemp(prefix="platform-pg-migrate-")
        try:
            run_migrate(scratch, self.url("template_migrated"))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def stop(self) -> None:
        try:
            self._run([_bin("pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "stop"])
        except RuntimeError:
            pass  # already gone
        shutil.rmtree(self.root, ignore_errors=True)


_cluster: Cluster | None = None
_start_lock = threading.Lock()


def cluster() -> Cluster:
    """The session's cluster, started on first use and stopped when the interpreter exits."""
    global _cluster
    with _start_lock:
        if _cluster is None:
            os_user = "postgres" if os.geteuid() == 0 else None
            root = tempfile.mkdtemp(prefix="platform-pg-")
            os.chmod(root, 0o755)
            started = Cluster(root=root, port=_free_port(), os_user=os_user)
            try:
                started.start()
            except BaseException:
                started.stop()
                raise
            atexit.register(started.stop)
            _cluster = started
        return _cluster
