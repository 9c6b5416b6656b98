"""PostgreSQL mechanics behind the database port (issue 31): open a peewee PostgresqlDatabase from
`database_url`, serialise migrations across processes, classify its faults, snapshot with pg_dump.

Driver: psycopg2 (psycopg2-binary wheels): peewee's PostgresqlDatabase is built and tested on it first,
it needs no system libpq, and psycopg 3 would buy nothing here (no async use: blocking work already
runs on the project's executors).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import select
import shutil
import socket
import subprocess
import threading
from typing import Any, Iterator
from urllib.parse import urlsplit

import peewee

from platform_server import db
from platform_server.lazy import lazy_import

db_url = lazy_import("playhouse.db_url")
psycopg2 = lazy_import("psycopg2")  # the listener's own connection (peewee imports it for the others)
log = logging.getLogger(__name__)

# The key of the advisory lock every process takes around its migrations (any fixed 64-bit number:
# "PLATMIGR" in ASCII), so two processes starting at once never apply the same step twice.
MIGRATION_LOCK_KEY = 0x504C41544D494752


# The table a data-changing statement writes (peewee quotes names; raw SQL sites may not).
_WRITE = re.compile(r'^\s*(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+"?(\w+)"?', re.IGNORECASE)


def portable(sql: str) -> str:
    """The raw SQL sites' SQLite spellings in PostgreSQL's: `?` placeholders become `%s` (peewee's own
    queries already use `%s`, and contain no `?`), a literal `%` is doubled for psycopg2."""
    if "?" not in sql:
        return sql
    # `x IS ?`: SQLite's null-safe equality with a value; PostgreSQL spells it IS NOT DISTINCT FROM
    return _IS_PARAM.sub(" IS NOT DISTINCT FROM ?", sql).replace("%", "%%").replace("?", "%s")


_IS_PARAM = re.compile(r"\s+IS\s+\?", re.IGNORECASE)


# Column types as the SQLite store has them: booleans 0/1 (the raw SQL sites compare with 1 and 0) and
# times as sortable text (db.DateTimeField writes text; the raw SQL compares it with text parameters),
# floats in 8 bytes as SQLite's REAL (peewee's PostgreSQL default, REAL, is 4: 0.7 would read back 0.699999988).
FIELD_TYPES = {"BOOL": "SMALLINT", "DATETIME": "TEXT", "FLOAT": "DOUBLE PRECISION"}


class Database(peewee.PostgresqlDatabase):
    """PostgreSQL with the SQLite store's bookkeeping: a write to a watched table bumps its version now
    and again when its transaction ends (as db.py's hooks do), so this process's caches never keep
    what a write of its own made stale. Other processes' writes arrive through the change feed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["field_types"] = FIELD_TYPES
        super().__init__(*args, **kwargs)
        self._pending = threading.local()

    def _initialize_connection(self, conn: Any) -> None:
        super()._initialize_connection(conn)  # type: ignore[misc]  # peewee's hook, untyped
        # Every connection listens, so the notifications of its own commits (the watched tables' triggers,
        # auth_epoch's among them) arrive with the COMMIT's answer: this process's caches see its own
        # writes at once, not when the listener thread gets to them.
        with conn.cursor() as cursor:
            cursor.execute(f"LISTEN {CHANNEL}")

    def _drain(self) -> None:
        conn = getattr(self, "_state").conn  # peewee keeps the connection per thread here
        if conn is not None and conn.notifies:
            tables = {n.payload for n in conn.notifies}
            conn.notifies.clear()
            db.bump_tables([t for t in tables if t in db.WATCHED_TABLES])

    def execute_sql(self, sql: str, params: Any = None) -> Any:
        cursor = super().execute_sql(portable(sql), params)
        self._drain()
        match = _WRITE.match(sql)
        if match is not None and match.group(1) in db.WATCHED_TABLES:
            table = match.group(1)
            db.bump_tables((table,))
            if self.in_transaction():
                pending: set[str] = getattr(self._pending, "tables", set())
                pending.add(table)
                self._pending.tables = pending
        return cursor

    def _transaction_over(self) -> None:
        tables = getattr(self._pending, "tables", None)
        if tables:
            self._pending.tables = set()
            db.bump_tables(tables)

    def begin(self, isolation_level: Any = None) -> None:
        # atomic("IMMEDIATE") asks SQLite for its write lock at BEGIN; PostgreSQL locks rows as it writes
        if isinstance(isolation_level, str) and isolation_level.upper() in ("DEFERRED", "IMMEDIATE", "EXCLUSIVE"):
            isolation_level = None
        super().begin(isolation_level)

    def commit(self) -> None:
        super().commit()
        self._drain()
        self._transaction_over()

    def rollback(self) -> None:
        super().rollback()
        self._transaction_over()


def connect_params(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise ValueError(f"database_url must start with postgresql:// (got {parts.scheme or 'no scheme'}://)")
    if not parts.path.strip("/"):
        raise ValueError("database_url names no database (postgresql://user:pass@host/DATABASE)")
    params: dict[str, Any] = dict(db_url.parse(url))
    params["dbname"] = params.pop("database")  # psycopg2's spelling (peewee takes the name apart)
    return params


def open_database(url: str) -> peewee.PostgresqlDatabase:
    """Connect to the database named by `url` and bind every model to it."""
    params = connect_params(url)
    name = params.pop("dbname")
    store = Database(name, autorollback=False, **params)
    db.database.initialize(store)
    db.bump_tables(list(db.WATCHED_TABLES))  # what was read from a database opened before is not this one's
    store.connect(reuse_if_open=True)
    return store


NODE_SEQUENCE = "platform_id_node"  # each process that opens the database takes the next number


def claim_node(store: peewee.Database) -> int:
    """This process's Snowflake node (ids.py): processes sharing the database must not hand out the same
    ids, and a fixed node made two processes' rows of the same millisecond collide. A sequence numbers
    every process that opens the database (1,024 nodes, reused round-robin: two live processes share
    one only if 1,023 others started in between)."""
    with migration_lock():  # CREATE ... IF NOT EXISTS is not safe against a concurrent create
        store.execute_sql(f"CREATE SEQUENCE IF NOT EXISTS {NODE_SEQUENCE}")
    return int(store.execute_sql(f"SELECT nextval('{NODE_SEQUENCE}')").fetchone()[0]) % 1024


CHANNEL = "platform_changes"  # NOTIFY channel; the payload is the changed table's name


def notify_triggers(store: peewee.Database, tables: list[str]) -> None:
    """A statement-level trigger on each watched table that NOTIFYs its name (PostgreSQL folds the
    same payload within one transaction into one notification, delivered at commit to every process)."""
    store.execute_sql(
        "CREATE OR REPLACE FUNCTION platform_notify_change() RETURNS trigger LANGUAGE plpgsql AS "
        f"$$ BEGIN PERFORM pg_notify('{CHANNEL}', TG_TABLE_NAME); RETURN NULL; END $$"
    )
    existing = set(store.get_tables())
    for table in tables:
        if table in existing:
            store.execute_sql(
                f'CREATE OR REPLACE TRIGGER platform_notify_change AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "{table}" '
                "FOR EACH STATEMENT EXECUTE FUNCTION platform_notify_change()"
            )


class ChangeListener:
    """A thread on its own connection that LISTENs and bumps the versions of the tables other processes
    changed, so caches drop what they read even when this process makes no query of its own."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()
        self._wake_read, self._wake_write = socket.socketpair()  # stop() writes here so the select returns at once

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="pg-change-listener", daemon=True)
        self._thread.start()
        self.ready.wait(10)

    def stop(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._wake_write.send(b"x")
        if self._thread is not None:
            self._thread.join(5)
            if not self._thread.is_alive():
                self._wake_read.close()
                self._wake_write.close()
            self._thread = None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn = psycopg2.connect(**connect_params(self.url))
                conn.autocommit = True
                with conn.cursor() as cursor:
                    cursor.execute(f"LISTEN {CHANNEL}")
                # a reconnect may have missed notifications: everything read before is suspect
                db.bump_tables(list(db.WATCHED_TABLES))
                self.ready.set()
                while not self._stop.is_set():
                    if conn in select.select([conn, self._wake_read], [], [], LISTEN_POLL_S)[0]:
                        conn.poll()
                        tables = {n.payload for n in conn.notifies}
                        conn.notifies.clear()
                        db.bump_tables([t for t in tables if t in db.WATCHED_TABLES])
                conn.close()
            except Exception as exc:  # noqa: BLE001 - the server went away: retry, caches dropped on reconnect
                if self.ready.is_set():  # said once per outage, not once a second
                    log.warning("change listener: %s (reconnecting)", exc)
                self.ready.clear()
                self._stop.wait(LISTEN_RETRY_S)


LEADER_LOCK_KEY = 0x504C41544C454144  # "PLATLEAD": the advisory lock whose holder is the leader
LEADER_CHECK_S = 1.0  # how often a follower tries the lock and the leader checks its connection


class Leader:
    """The leader lock: a session-level advisory lock held on a connection of its own. A follower tries it
    every LEADER_CHECK_S; when the leader process dies its session ends, PostgreSQL releases the lock and
    the next try of another process takes it. A leader whose connection fails stops leading at once."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._leading = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.tried = threading.Event()  # set after the first attempt (tests and start-up wait for it)

    def is_leader(self) -> bool:
        return self._leading

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="pg-leader", daemon=True)
        self._thread.start()
        self.tried.wait(10)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        self._leading = False

    def _run(self) -> None:
        conn: Any = None
        while not self._stop.is_set():
            try:
                if conn is None:
                    conn = psycopg2.connect(**connect_params(self.url))
                    conn.autocommit = True
                with conn.cursor() as cursor:
                    if self._leading:
                        cursor.execute("SELECT 1")  # still connected, so still holding the lock
                    else:
                        cursor.execute("SELECT pg_try_advisory_lock(%s)", (LEADER_LOCK_KEY,))
                        self._leading = bool(cursor.fetchone()[0])
                        if self._leading:
                            log.info("this process is the leader now")
            except Exception as exc:  # noqa: BLE001 - connection lost: the lock went with it
                if self._leading:
                    log.warning("leader lock lost: %s", exc)
                self._leading = False
                if conn is not None:
                    with contextlib.suppress(Exception):
                        conn.close()
                conn = None
            self.tried.set()
            self._stop.wait(LEADER_CHECK_S)
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()  # the lock is released with the session


LISTEN_POLL_S = 1.0  # how often the listener checks for its stop flag (stop() also wakes it at once)
LISTEN_RETRY_S = 1.0  # wait before reconnecting after the connection failed


@contextlib.contextmanager
def migration_lock() -> Iterator[None]:
    """Hold the cluster-wide advisory lock while this process migrates (others wait on it)."""
    store = db.database.obj
    store.execute_sql("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_KEY,))
    try:
        yield
    finally:
        store.execute_sql("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))


def storage_fault(exc: BaseException | None) -> str | None:
    """`full` when the server says it has no space (SQLSTATE 53100), `io` on an I/O error (58030),
    `busy` on a lock timeout (55P03); None for anything else."""
    seen = 0
    while exc is not None and seen < 8:
        code = getattr(exc, "pgcode", None)
        if code == "53100":
            return "full"
        if code == "58030":
            return "io"
        if code == "55P03":
            return "busy"
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def snapshot(url: str, target: str) -> None:
    """A consistent copy through pg_dump (custom format); raises RuntimeError saying why not."""
    tool = shutil.which("pg_dump")
    if tool is None:
        raise RuntimeError("snapshots of a PostgreSQL store need pg_dump (Debian: postgresql-client); use pg_dump or your provider's backups")
    env = dict(os.environ)
    parts = urlsplit(url)
    if parts.password:
        env["PGPASSWORD"] = parts.password
    done = subprocess.run([tool, "--format=custom", f"--file={target}", "--dbname", url], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"pg_dump failed: {done.stderr.strip()}")
