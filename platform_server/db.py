"""The SQLite database (apsw, WAL), the model base class and the numbered-migrations runner."""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import json
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence, TypeVar, cast

import apsw
import peewee
from playhouse.apsw_ext import APSWDatabase

from platform_server.ids import next_id

log = logging.getLogger(__name__)

database = peewee.DatabaseProxy()

PRAGMAS = (
    ("journal_mode", "wal"),
    ("foreign_keys", 1),
    ("busy_timeout", 5000),
    ("synchronous", "normal"),
    ("cache_size", -16000),
    ("secure_delete", 1),  # replaced values (a secret sealed, a row deleted) do not linger in free space
)


# Tables whose row changes (by any connection of this process, triggers included) bump a counter
# here, so in-memory caches notice them without a query: table name -> changes seen.
#
# A change counts twice: when the row is written, and again once its transaction is over (committed:
# SQLite's WAL hook, which runs after the commit is visible to other connections; or rolled back).
# A reader that cached what it read between the two (another thread's uncommitted write was not
# visible yet) therefore sees its cache invalidated after the commit.
WATCHED_TABLES: dict[str, int] = {}
WAL_AUTOCHECKPOINT_PAGES = 1000  # SQLite's default: past it the checkpointer is woken (our WAL hook replaces SQLite's own)
SLOW_CHECKPOINT_S = 0.05  # a checkpoint (copy and sync) taking this long is logged
# A writer that never pauses keeps the WAL from ever being fully copied, so it never restarts (the
# checkpointer takes no write lock while writes come): past this many pages the committing connection
# checkpoints itself after its commit, as SQLite's own auto-checkpoint does, with any error logged and
# swallowed (the commit stands).
WAL_HARD_LIMIT_PAGES = 10_000
HARD_LIMIT_WAIT_S = 1.0  # past the hard limit a writer waits at most this long for the checkpointer's checkpoint
CHECKPOINT_GAP_S = 0.1  # at most one PASSIVE checkpoint per this long (each wake-up after a commit past the limit)
CATCH_UP_PASSES = 3  # PASSIVE checkpoints in a row at most, while commits keep adding frames during each copy
CHECKPOINT_IDLE_S = 2.0  # no commit for this long: the WAL is checkpointed and truncated
# The loop thread's connection waits at most this long for another connection's write lock (a busy
# handler sleeps the thread: on the IOLoop it freezes every stream), then the write fails as busy and
# answers 503 with nothing written. Other threads (executors) keep the long wait.
LOOP_BUSY_TIMEOUT_MS = 20
THREAD_BUSY_TIMEOUT_MS = 5000


def watch_table(name: str) -> None:
    """Count this process's row changes to `name` in `WATCHED_TABLES`."""
    WATCHED_TABLES.setdefault(name, 0)


_WATCH_LOCK = threading.Lock()


def bump_tables(tables: Iterable[str]) -> None:
    """Move the versions of `tables` (another store's tracker calls it too: pg.py)."""
    with _WATCH_LOCK:  # executor threads write too; no increment may be lost
        for table in tables:
            WATCHED_TABLES[table] += 1


class _ChangeTracker:
    """One connection's hooks: count watched-table writes now, and again when their transaction ends."""

    def __init__(self) -> None:
        self.pending: set[str] = set()

    def on_row_change(self, kind: int, schema: str, table: str, rowid: int) -> None:
        if table in WATCHED_TABLES:
            self.pending.add(table)
            bump_tables((table,))

    def on_transaction_end(self) -> None:
        if self.pending:
            tables, self.pending = self.pending, set()
            bump_tables(tables)

    def on_wal_commit(self, conn: Any, name: str, pages: int) -> int:
        # Runs after the commit: whatever happens here must not raise, or a committed write reads as
        # failed. Checkpoints run on the checkpointer's thread; here only past the hard limit, or in a
        # process that runs no checkpointer (a command-line tool), and their errors are only logged.
        self.on_transaction_end()
        checkpointer = _checkpointer
        if checkpointer is not None:
            checkpointer.note_commit(pages)
        if pages >= (WAL_HARD_LIMIT_PAGES if checkpointer is not None else WAL_AUTOCHECKPOINT_PAGES):
            # Past the hard limit the checkpointer is not keeping up: this writer waits for the checkpoint
            # it is running (it would make ours fail as busy), then copies the rest itself, so the WAL
            # restarts at the next write instead of growing while the two take turns failing.
            running = checkpointer.running if checkpointer is not None else None
            if running is not None and not running.acquire(timeout=HARD_LIMIT_WAIT_S):
                running = None
            try:
                conn.wal_checkpoint(name)  # passive: never waits on readers or writers
            except Exception as exc:  # noqa: BLE001 - the commit is done; a later one tries again
                log.warning("WAL checkpoint after a commit (%d pages) failed: %s", pages, exc)
            finally:
                if running is not None:
                    running.release()
        return 0  # SQLITE_OK


def fold(text: str | None) -> str | None:
    """SQL `fold(text)`: text in lower case, Unicode-aware as FTS5's case folding is (SQLite's own lower() and
    LIKE fold ASCII only), so a substring test on it matches what a trigram index of the text matches."""
    return text.lower() if isinstance(text, str) else text


class Database(APSWDatabase):
    """APSW with change tracking on every connection (see `WATCHED_TABLES`)."""

    loop_thread: int | None = None  # the IOLoop's thread: its connection waits on a lock only briefly
    loop_busy_timeout_ms = LOOP_BUSY_TIMEOUT_MS

    def _add_conn_hooks(self, conn: Any) -> None:
        super()._add_conn_hooks(conn)
        tracker = _ChangeTracker()
        conn.set_update_hook(tracker.on_row_change)
        conn.set_wal_hook(tracker.on_wal_commit)
        conn.set_rollback_hook(tracker.on_transaction_end)

    def _initialize_connection(self, conn: Any) -> None:
        super()._initialize_connection(conn)  # the pragmas, busy_timeout among them
        conn.create_scalar_function("fold", fold, 1, deterministic=True)
        if threading.get_ident() == self.loop_thread:
            conn.setbusytimeout(self.loop_busy_timeout_ms)


class Checkpointer:
    """WAL checkpoints off the commit path: a thread with its own connection.

    PASSIVE (never waits, never takes the write lock) each time commits grew the WAL by
    `WAL_AUTOCHECKPOINT_PAGES`, at most once per `CHECKPOINT_GAP_S`; once no commit came for
    `CHECKPOINT_IDLE_S`, a PASSIVE and, when it left nothing to copy, TRUNCATE. A mode that takes the
    write lock (RESTART, TRUNCATE) copies frames and syncs while holding it, and the IOLoop's writer waits
    only `LOOP_BUSY_TIMEOUT_MS` for it: such a mode runs only when idle and with nothing left to copy, so it
    holds the lock for the truncation alone. A WAL that never finds itself fully copied (writes that never
    pause) restarts through the hard limit (`on_wal_commit`). Failures are logged, never raised: the
    commits they follow are durable.
    """

    def __init__(self, path: str, on_fault: Callable[[BaseException], object] | None = None) -> None:
        self.path = path
        self.on_fault = on_fault
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.pages = 0  # the WAL's size after the last commit (frames)
        self.checkpointed_at = 0  # the WAL's size when the last PASSIVE checkpoint began
        self.last_commit = time.monotonic()
        self.checkpoints = 0
        self.running = threading.Lock()  # held during each checkpoint (see `on_wal_commit`)
        self.thread = threading.Thread(target=self._run, name="wal-checkpointer", daemon=True)

    def note_commit(self, pages: int) -> None:
        """From the WAL hook (any thread): cheap, never blocks. Wakes the thread when the WAL passed the
        limit by another limit's worth of pages since the last checkpoint (or restarted since)."""
        self.pages = pages
        self.last_commit = time.monotonic()
        if pages >= WAL_AUTOCHECKPOINT_PAGES and (pages < self.checkpointed_at or pages - self.checkpointed_at >= WAL_AUTOCHECKPOINT_PAGES):
            if not self.wake.is_set():
                self.wake.set()

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.wake.set()
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join(5)

    def _run(self) -> None:
        try:
            conn = apsw.Connection(self.path)
            conn.setbusytimeout(0)  # a checkpoint that would wait is tried again later
        except Exception as exc:  # noqa: BLE001 - no checkpointer: the WAL grows until the next start
            log.warning("the WAL checkpointer could not open the database: %s", exc)
            return
        try:
            while not self.stopping.is_set():
                if self.wake.wait(CHECKPOINT_IDLE_S):
                    if self.stopping.is_set():
                        break
                    self.wake.clear()
                    self.checkpointed_at = self.pages
                    left, passes = self._checkpoint(conn, "PASSIVE"), 1
                    while left and passes < CATCH_UP_PASSES:  # commits came during the copy: their few frames too,
                        left, passes = self._checkpoint(conn, "PASSIVE"), passes + 1  # so the next writer restarts the WAL
                    self.stopping.wait(CHECKPOINT_GAP_S)  # writes keep coming: the next one waits its turn
                elif self.pages and time.monotonic() - self.last_commit >= CHECKPOINT_IDLE_S:
                    # idle: the WAL file shrinks back to nothing, once a PASSIVE copied every frame (a TRUNCATE
                    # that had frames to copy would hold the write lock through the copy and its sync)
                    if self._checkpoint(conn, "PASSIVE") == 0:
                        self._checkpoint(conn, "TRUNCATE")
        finally:
            conn.close()

    def _checkpoint(self, conn: Any, mode: str) -> int | None:
        """Run one checkpoint: the WAL's frames it left uncopied (0: all), None when it failed or met a lock."""
        started = time.perf_counter()
        try:
            with self.running:
                busy, frames, copied = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchall()[0]
        except Exception as exc:  # noqa: BLE001 - logged and reported; the next wake-up tries again
            log.warning("WAL checkpoint (%s) failed: %s", mode, exc)
            if self.on_fault is not None:
                self.on_fault(exc)
            return None
        if busy:  # a reader on an older snapshot, or a writer (TRUNCATE): tried again later
            return None
        self.checkpoints += 1
        took = time.perf_counter() - started
        if took >= SLOW_CHECKPOINT_S:
            log.warning("WAL checkpoint (%s) of %d pages took %.0f ms", mode, self.pages, took * 1000)
        if mode == "TRUNCATE":
            self.pages = 0
        return max(0, frames - copied)


_checkpointer: Checkpointer | None = None


def start_checkpointer(path: str, on_fault: Callable[[BaseException], object] | None = None) -> Checkpointer:
    """Checkpoint `path`'s WAL on a thread of its own from now on (replacing any earlier checkpointer)."""
    global _checkpointer
    stop_checkpointer()
    _checkpointer = Checkpointer(path, on_fault)
    _checkpointer.start()
    return _checkpointer


def stop_checkpointer() -> None:
    global _checkpointer
    if _checkpointer is not None:
        _checkpointer.stop()
        _checkpointer = None


def storage_fault(exc: BaseException | None) -> str | None:
    """`busy` (another connection holds the lock), `full` (SQLITE_FULL, ENOSPC) or `io` (other write
    errors of the disk) when exc, or what it wraps, says so; None for anything else."""
    seen = 0
    while exc is not None and seen < 5:
        seen += 1
        if isinstance(exc, (apsw.BusyError, apsw.LockedError)):
            return "busy"
        if isinstance(exc, apsw.FullError):
            return "full"
        if isinstance(exc, apsw.IOError):  # (not ReadOnlyError: a datasource opened read-only says nothing of our disk)
            return "io"
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return "full"
        if isinstance(exc, peewee.DatabaseError):
            inner = exc.args[0] if exc.args and isinstance(exc.args[0], BaseException) else None
            if inner is None:
                text = str(exc)
                if "database is locked" in text:
                    return "busy"
                if "disk is full" in text:
                    return "full"
            exc = inner or exc.__cause__ or exc.__context__  # peewee raises its own inside apsw's `except`
            continue
        exc = exc.__cause__ or exc.__context__
    return None


class CopyBusy(Exception):
    """A live copy met a lock (another connection writing a checkpoint, a migration)."""


class CopyFailed(Exception):
    """A live copy failed for another reason (the message says which)."""


def copy_database(source: str, target: str, busy_ms: int) -> None:
    """Copy every page of the live WAL database `source` to a new file `target` in one backup step.

    One step holds one read transaction: writers go on (WAL) and cannot make the copy start over, as a
    copy in slices does each time the source changes."""
    src = apsw.Connection(source, flags=apsw.SQLITE_OPEN_READONLY)
    dst = apsw.Connection(target)
    try:
        src.set_busy_timeout(busy_ms)
        with dst.backup("main", src, "main") as step:
            step.step(-1)
    except (apsw.BusyError, apsw.LockedError) as exc:
        raise CopyBusy(str(exc)) from None
    except apsw.Error as exc:
        raise CopyFailed(str(exc)) from None
    finally:
        dst.close()
        src.close()


def integrity_check(path: str) -> str:
    """SQLite's integrity check of the database file at `path`: "ok", or what is wrong."""
    try:
        conn = apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error as exc:
        return str(exc)
    try:
        row = conn.execute("PRAGMA integrity_check").fetchone()
        return str(row[0]) if row else "no answer"
    except apsw.Error as exc:
        return str(exc)
    finally:
        conn.close()


def open_database(path: str, loop_busy_timeout_ms: int | None = None) -> APSWDatabase:
    """Open (or create) the SQLite file and bind it to every model; with `loop_busy_timeout_ms`, this
    thread runs the IOLoop and its connection waits at most that long for another's write lock."""
    db = Database(path, pragmas=PRAGMAS, timeout=THREAD_BUSY_TIMEOUT_MS / 1000)
    if loop_busy_timeout_ms is not None:
        db.loop_thread, db.loop_busy_timeout_ms = threading.get_ident(), loop_busy_timeout_ms
    database.initialize(db)
    bump_tables(list(WATCHED_TABLES))  # what was read from a database opened before is not this one's
    db.connect(reuse_if_open=True)
    return db


def close_database() -> None:
    """Close this thread's connection, if any."""
    if database.obj is not None and not database.is_closed():
        database.close()


_EPOCH = dt.datetime(1970, 1, 1)


def utcnow() -> dt.datetime:
    """Current UTC time, naive, millisecond precision (the storage convention; called often: one addition)."""
    return _EPOCH + dt.timedelta(milliseconds=time.time_ns() // 1_000_000)


def iso(value: dt.datetime | None) -> str | None:
    """ISO 8601 UTC with Z, as the API sends timestamps."""
    if value is None:
        return None
    if isinstance(value, str):
        if len(value) == 23 and value[10] == " ":  # the stored form, `YYYY-MM-DD HH:MM:SS.mmm` (naive UTC)
            return f"{value[:10]}T{value[11:]}Z"
        value = dt.datetime.fromisoformat(value)
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value.isoformat(timespec="milliseconds") + "Z"  # fixed width, so the text sorts like the time


def parse_iso(text: str) -> dt.datetime:
    """Parse ISO 8601 (with Z or an offset, or naive UTC) into naive UTC."""
    value = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def stored_time(value: dt.datetime) -> str:
    """A time as the database stores it (for plain SQL): sortable text, millisecond precision."""
    return value.isoformat(sep=" ", timespec="milliseconds")


class DateTimeField(peewee.DateTimeField):
    """Naive UTC datetime stored as sortable text with millisecond precision (apsw binds no datetime)."""

    def db_value(self, value: Any) -> str | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = parse_iso(value)
        return stored_time(value)


class BooleanField(peewee.BooleanField):
    """Boolean stored as 0/1."""

    def db_value(self, value: Any) -> int | None:
        return None if value is None else int(bool(value))


class JSONField(peewee.TextField):
    """A JSON document stored as text."""

    def db_value(self, value: Any) -> str | None:
        return None if value is None else json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    def python_value(self, value: str | None) -> Any:
        return None if value is None else json.loads(value)


class BaseModel(peewee.Model):
    id = peewee.BigIntegerField(primary_key=True, default=next_id)

    if TYPE_CHECKING:  # peewee adds `<foreign key>_id` and joined-row attributes at run time

        def __getattr__(self, name: str) -> Any: ...

    class Meta:
        database = database
        legacy_table_names = False


M = TypeVar("M", bound=peewee.Model)


def dict_rows(query: Any) -> list[dict[str, Any]]:
    """A query's rows as dicts (peewee's `.dicts()`, typed)."""
    return list(query.dicts())


def tuple_rows(query: Any) -> list[tuple[Any, ...]]:
    """A query's rows as tuples (peewee's `.tuples()`, typed)."""
    return list(query.tuples())


def dict_row(query: Any) -> dict[str, Any]:
    """The first row of a query as a dict (`.dicts().get()`, typed)."""
    row: dict[str, Any] = query.dicts().get()
    return row


def one_transaction() -> contextlib.AbstractContextManager[Any]:
    """A transaction, or nothing more when one is open already: the outer one commits (a nested
    `atomic()` is a savepoint whose unique name SQLite compiles as a new statement every time)."""
    return contextlib.nullcontext() if database.in_transaction() else database.atomic()


_POINT_SQL: dict[tuple[type, tuple[str, ...]], tuple[str, list[tuple[str | None, Any]]]] = {}


def first_where(model: type[M], **equal: Any) -> M | None:
    """`model.get_or_none(field == value, ...)` with its SQL built once per model and field names.

    For hot point lookups (a turn's start, a request's checks): peewee builds a query's SQL on every
    execution, which costs more than SQLite running it. Values are bound as given (ids, keys, text).
    """
    names = tuple(equal)
    cached = _POINT_SQL.get((model, names))
    if cached is None:
        marks = {f"\x00first_where:{name}": name for name in names}
        query = model.select().where(*(getattr(model, name) == mark for mark, name in marks.items())).limit(1)
        sql, params = query.sql()
        template = [(marks.get(p) if isinstance(p, str) else None, p) for p in params]  # (field name, constant)
        cached = _POINT_SQL[(model, names)] = (sql, template)
    sql, template = cached
    bound = [equal[name] if name is not None else constant for name, constant in template]
    rows = fetch_models(model, sql, bound)
    return rows[0] if rows else None


_READERS: dict[tuple[type, str], list[tuple[str, Callable[[Any], Any]]]] = {}


def fetch_models(model: type[M], sql: str, params: Sequence[Any] = ()) -> list[M]:
    """Model objects from plain SQL selecting the model's columns (hot reads: peewee's `raw()` works out
    the columns again on every run; here that is done once per statement)."""
    cursor = database.execute_sql(sql, params)
    readers = _READERS.get((model, sql))
    out: list[M] = []
    for row in cursor:
        if readers is None:
            # apsw's cursor describes itself with getdescription(); a DB-API one (psycopg2) with .description
            described = cursor.getdescription() if hasattr(cursor, "getdescription") else cursor.description
            readers = _READERS[(model, sql)] = _column_readers(model, [d[0] for d in described])
        item = model(__no_default__=1, **{name: read(value) for (name, read), value in zip(readers, row)})
        item._dirty.clear()  # type: ignore[attr-defined]  # peewee keeps the changed fields here
        out.append(item)
    return out


def _column_readers(model: type[peewee.Model], columns: list[str]) -> list[tuple[str, Callable[[Any], Any]]]:
    by_column = {f.column_name: f for f in model._meta.sorted_fields}
    readers: list[tuple[str, Callable[[Any], Any]]] = []
    for column in columns:
        field = by_column.get(column)
        readers.append((field.name, field.python_value) if field is not None else (column, lambda value: value))
    return readers


_INSERT_SQL: dict[tuple[type, tuple[str, ...]], tuple[str, list[peewee.Field]]] = {}
_UPDATE_SQL: dict[tuple[type, tuple[str, ...]], tuple[str, list[peewee.Field]]] = {}


def insert_row(model: type[peewee.Model], /, **values: Any) -> Any:
    """`model.create(**values)` for hot writes: no model object, SQL built once per model and field set.

    Defaults apply as in peewee (callables called); values go through each field's `db_value`.
    Returns the primary key (the generated id)."""
    meta = model._meta
    row = dict(values)
    for field, default in meta.defaults.items():
        if field.name not in row and field.column_name not in row:
            row[field.name] = default() if callable(default) else default
    names = tuple(row)
    cached = _INSERT_SQL.get((model, names))
    if cached is None:
        fields = [meta.combined[name] for name in names]
        columns = ", ".join(f'"{f.column_name}"' for f in fields)
        sql = f'INSERT INTO "{meta.table_name}" ({columns}) VALUES ({", ".join("?" * len(fields))})'
        cached = _INSERT_SQL[(model, names)] = (sql, fields)
    sql, fields = cached
    database.execute_sql(sql, [f.db_value(row[name]) for name, f in zip(names, fields)])
    key: peewee.Field = cast(peewee.Field, meta.primary_key)
    return row.get(key.name)


def update_row(model: type[peewee.Model], row_id: Any, /, **values: Any) -> int:
    """`model.update(**values).where(model.id == row_id)` for hot writes, SQL built once per field set;
    returns how many rows it changed (0: no such row)."""
    names = tuple(values)
    cached = _UPDATE_SQL.get((model, names))
    if cached is None:
        meta = model._meta
        key: peewee.Field = cast(peewee.Field, meta.primary_key)
        fields = [meta.combined[name] for name in names]
        assignments = ", ".join(f'"{f.column_name}" = ?' for f in fields)
        sql = f'UPDATE "{meta.table_name}" SET {assignments} WHERE "{key.column_name}" = ?'
        cached = _UPDATE_SQL[(model, names)] = (sql, fields)
    sql, fields = cached
    cursor = database.execute_sql(sql, [*(f.db_value(values[name]) for name, f in zip(names, fields)), row_id])
    if hasattr(cursor, "getconnection"):  # apsw: the connection counts the last statement's changes
        changed: int = cursor.getconnection().changes()
        return changed
    return int(cursor.rowcount)  # a DB-API cursor (PostgreSQL)


class SchemaMigration(peewee.Model):
    name = peewee.CharField(primary_key=True)
    applied_at = DateTimeField(default=utcnow)

    class Meta:
        database = database
        table_name = "schema_migration"


Migration = tuple[str, Callable[[peewee.Database], None]]


def create_tables(*models: type[peewee.Model]) -> Callable[[peewee.Database], None]:
    """A migration step that creates the given tables."""
    return lambda db: db.create_tables(models, safe=True)


def run_migrations(migrations: Sequence[Migration]) -> list[str]:
    """Apply, in order, each numbered migration not yet recorded; returns the names applied."""
    db = database.obj
    db.create_tables([SchemaMigration], safe=True)
    done = {row.name for row in SchemaMigration.select()}
    applied: list[str] = []
    for name, step in migrations:
        if name in done:
            continue
        with db.atomic():
            step(db)
            SchemaMigration.create(name=name)
        applied.append(name)
        log.info("migration applied: %s", name)
    return applied


def chunks(items: Iterable[Any], size: int) -> Iterable[list[Any]]:
    """Split items into lists of at most size (SQLite's variable limit)."""
    batch: list[Any] = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch
