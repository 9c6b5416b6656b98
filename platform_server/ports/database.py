"""The database port: open, flush and close the store, classify storage faults, snapshot it.

Areas keep using peewee models bound to `db.database`; what is specific to the engine (pragmas, WAL
checkpoints, apsw's errors, its online backup) is reached only through this port, so a second backend
(PostgreSQL, issue 31) implements the same methods and nothing outside `db.py` and this package changes.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Callable, ContextManager, Literal, Protocol, cast
from urllib.parse import urlsplit

from platform_server import db, ids
from platform_server.lazy import lazy_import
from platform_server.ports import leader

if TYPE_CHECKING:
    from platform_server.pg import ChangeListener, Leader

pg = lazy_import("platform_server.pg")  # only a PostgreSQL deployment loads psycopg2
backup_pg = lazy_import("platform_server.backup_pg")

StorageFault = Literal["busy", "full", "io"]


class SnapshotBusy(Exception):
    """The store stayed locked while a snapshot was taken: try again later."""


class SnapshotFailed(Exception):
    """The snapshot could not be taken (the message says why)."""


class DatabasePort(Protocol):
    """The process's database: one per process, chosen at startup."""

    def open(self, loop_busy_timeout_ms: int | None = None) -> None:
        """Open (creating it if needed) and bind every model; with a timeout, the calling thread runs the
        IOLoop and its waits for another writer's lock are that short."""

    def close(self) -> None:
        """Close this thread's connection, if any."""

    def flush(self) -> None:
        """Make the main store complete by itself (SQLite: checkpoint the WAL into the file and truncate it)."""

    def start_background(self, on_fault: Callable[[BaseException], object] | None = None) -> None:
        """Start the store's own upkeep off the request path (SQLite: the WAL checkpointer thread)."""

    def stop_background(self) -> None: ...

    def files(self) -> list[str]:
        """The files on this machine holding the data (made private at start), existing or not."""

    def fault(self, exc: BaseException | None) -> StorageFault | None:
        """`busy` (another writer holds the lock), `full` (no space) or `io` (the disk fails) when the
        exception, or what it wraps, says so; None for anything else."""

    def snapshot(self, target: str, busy_ms: int) -> None:
        """A consistent copy of the live store written to `target` (raises SnapshotBusy, SnapshotFailed)."""

    def check_copy(self, path: str) -> str:
        """What is wrong with the copy at `path`, or "ok" when it is intact."""

    def migration_lock(self) -> ContextManager[None]:
        """Held while this process migrates: other processes starting on the same store wait for it."""

    def location(self) -> str:
        """Where the data is, to show an admin: the SQLite file's path, or the PostgreSQL URL without its password."""


class SqliteDatabase:
    """The default: one SQLite file over apsw in WAL mode (db.py holds the mechanics)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def open(self, loop_busy_timeout_ms: int | None = None) -> None:
        db.open_database(self.path, loop_busy_timeout_ms)

    def close(self) -> None:
        db.close_database()

    def flush(self) -> None:
        if db.database.obj is not None and not db.database.is_closed():
            db.database.obj.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")

    def start_background(self, on_fault: Callable[[BaseException], object] | None = None) -> None:
        db.start_checkpointer(self.path, on_fault)

    def stop_background(self) -> None:
        db.stop_checkpointer()

    def files(self) -> list[str]:
        return [self.path + suffix for suffix in ("", "-wal", "-shm")]

    def fault(self, exc: BaseException | None) -> StorageFault | None:
        return cast("StorageFault | None", db.storage_fault(exc))

    def snapshot(self, target: str, busy_ms: int) -> None:
        if not os.path.exists(self.path):
            raise SnapshotFailed(f"no database at {self.path}")
        try:
            db.copy_database(self.path, target, busy_ms)
        except db.CopyBusy as exc:
            raise SnapshotBusy(str(exc)) from None
        except db.CopyFailed as exc:
            raise SnapshotFailed(f"cannot copy the database: {exc}") from None

    def check_copy(self, path: str) -> str:
        return db.integrity_check(path)

    def migration_lock(self) -> ContextManager[None]:
        return contextlib.nullcontext()  # one file, one process: SQLite's write lock is enough

    def location(self) -> str:
        return os.path.realpath(self.path)


class PostgresDatabase:
    """PostgreSQL at `database_url` (pg.py holds the mechanics): no local files, no WAL upkeep here (the
    server does its own), migrations under an advisory lock, snapshots through pg_dump."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._listener: ChangeListener | None = None
        self._leader: Leader | None = None

    def open(self, loop_busy_timeout_ms: int | None = None) -> None:
        store = pg.open_database(self.url)
        ids.use_node(pg.claim_node(store))  # several processes share the database: ids of their own

    def close(self) -> None:
        db.close_database()

    def flush(self) -> None:
        pass  # every commit is durable in the server; nothing of ours to fold back

    def start_background(self, on_fault: Callable[[BaseException], object] | None = None) -> None:
        # after the migrations: every watched table exists now and gets its NOTIFY trigger
        pg.notify_triggers(db.database.obj, sorted(db.WATCHED_TABLES))
        self._listener = pg.ChangeListener(self.url)
        self._listener.start()
        self._leader = pg.Leader(self.url)  # several processes share this database: one runs the shared loops
        self._leader.start()
        leader.use(self._leader)

    def stop_background(self) -> None:
        if self._listener is not None:
            self._listener.stop()
            self._listener = None
        if self._leader is not None:
            self._leader.stop()
            leader.use(leader.ThisProcess())
            self._leader = None

    def files(self) -> list[str]:
        return []

    def fault(self, exc: BaseException | None) -> StorageFault | None:
        return cast("StorageFault | None", pg.storage_fault(exc))

    def snapshot(self, target: str, busy_ms: int) -> None:
        try:
            pg.snapshot(self.url, target)
        except RuntimeError as exc:
            raise SnapshotFailed(str(exc)) from None

    def check_copy(self, path: str) -> str:
        try:
            backup_pg.check_dump(path)  # pg_restore reads its table of contents
        except backup_pg.PgBackupError as exc:
            return str(exc)
        return "ok"

    def migration_lock(self) -> ContextManager[None]:
        return cast("ContextManager[None]", pg.migration_lock())

    def location(self) -> str:
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        user = f"{parts.username}@" if parts.username else ""
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{user}{host}{port}{parts.path}"  # never the password


_current: DatabasePort = SqliteDatabase("")


def use(port: DatabasePort) -> None:
    """Install the process's database (at startup)."""
    global _current
    _current = port


def current() -> DatabasePort:
    return _current


def storage_fault(exc: BaseException | None) -> StorageFault | None:
    """The installed database's classification of `exc` (see `DatabasePort.fault`)."""
    return _current.fault(exc)
