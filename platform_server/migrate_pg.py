"""`platform-server migrate-to-postgres --from data/platform.db --to postgresql://...`: copy a SQLite install.

The target must be a new, empty database: the migrations give it the current schema (cli.py runs them),
then every table the two share is copied in one transaction, parents before children (the foreign keys
hold at every insert), with the tables' own triggers off (the auth epoch's and the change notices would
otherwise rewrite or announce what is only being copied). Each table is then read back: its row count
and a checksum of its rows must equal the source's, or nothing is committed. The id sequences are moved
past the copied ids, so the next row the server creates gets a new id.

The checksum is order-independent (a digest of the sorted row digests): the two engines sort text keys
by different collations, and the copy must not be refused for that.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import peewee

from platform_server.lazy import lazy_import

pg_extras = lazy_import("psycopg2.extras")  # execute_values: one INSERT per batch of rows
psycopg2 = lazy_import("psycopg2")

BATCH = 1000  # rows per INSERT round trip and per read-back fetch


class MigrationRefused(Exception):
    """The copy cannot start or did not match (the message says why); nothing was committed."""


@dataclass(frozen=True)
class TableCopy:
    table: str
    rows: int
    checksum: str


def _value(value: Any) -> bytes:
    """One value in a form both engines' drivers give back alike (bytes as hex, floats by repr)."""
    if value is None:
        return b"n:"
    if isinstance(value, (bytes, memoryview)):
        return b"b:" + bytes(value).hex().encode()
    if isinstance(value, bool):
        return b"v:" + str(int(value)).encode()
    if isinstance(value, float):
        return b"f:" + repr(value).encode()
    return b"v:" + str(value).encode()


class _Checksum:
    """Count and digest of a table's rows, whatever order they come in."""

    def __init__(self) -> None:
        self.rows = 0
        self._digests: list[bytes] = []

    def add(self, rows: Iterable[tuple[Any, ...]]) -> None:
        for row in rows:
            self.rows += 1
            self._digests.append(hashlib.sha256(b"\x1f".join(_value(v) for v in row)).digest())

    def hexdigest(self) -> str:
        total = hashlib.sha256()
        for digest in sorted(self._digests):
            total.update(digest)
        return total.hexdigest()[:16]


def check_target(target: peewee.PostgresqlDatabase) -> None:
    """Refuse a target that holds any table: the copy goes only into a new, empty database."""
    tables = target.get_tables()
    if tables:
        raise MigrationRefused(
            f"the target database is not empty ({len(tables)} tables, e.g. {', '.join(sorted(tables)[:3])}): "
            "create a new database (createdb) and migrate into it"
        )


def open_source(source: str, migrations: list[str]) -> sqlite3.Connection:
    """The SQLite file opened read-only, once it is known to be a platform database at this version's
    schema (`migrations`: this version's names), checked before anything is written to the target."""
    try:
        src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
        have = {r[0] for r in src.execute("SELECT name FROM schema_migration")}
    except sqlite3.DatabaseError as exc:
        raise MigrationRefused(f"{source} is not a platform database ({exc})") from None
    want = set(migrations)
    if have != want:  # an older file lacks what later data migrations did to its rows (sealing, renames)
        src.close()
        advice = "upgrade platform-server first" if have - want else "start this version on it once first (it migrates the file)"
        raise MigrationRefused(f"{source} is at another schema version ({len(have)} migrations, this version has {len(want)}): {advice}")
    return src


def drop_tables(target: peewee.PostgresqlDatabase) -> None:
    """Undo a refused copy: the target was empty before, so every table in it is this command's."""
    for table in target.get_tables():
        target.execute_sql(f'DROP TABLE IF EXISTS "{table}" CASCADE')


def _parents_first(target: peewee.PostgresqlDatabase, tables: list[str]) -> list[str]:
    edges = target.execute_sql(
        "SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint WHERE contype = 'f' AND conrelid <> confrelid"
    ).fetchall()
    needs: dict[str, set[str]] = {t: set() for t in tables}
    for child, parent in edges:
        child, parent = child.strip('"'), parent.strip('"')
        if child in needs and parent in needs:
            needs[child].add(parent)
    ordered: list[str] = []
    while needs:
        ready = sorted(t for t, parents in needs.items() if not parents - set(ordered))
        if not ready:  # a cycle: the rest in name order (the insert then says which key failed)
            ready = sorted(needs)
        for table in ready:
            ordered.append(table)
            del needs[table]
    return ordered


def copy_sqlite_to_postgres(src: sqlite3.Connection, target: peewee.PostgresqlDatabase, say: Callable[[str], None]) -> list[TableCopy]:
    """Copy every shared table from the SQLite file `src` into the migrated, otherwise empty `target`.
    Raises MigrationRefused (with nothing committed) when a table read back differs."""
    src_tables = {r[0] for r in src.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    pg_tables = set(target.get_tables())
    shared = sorted(pg_tables & src_tables - {"schema_migration"})
    left = sorted(t for t in src_tables - pg_tables if not t.startswith("sqlite_"))
    if left:  # SQLite's own search indexes (FTS5 and its shadow tables): PostgreSQL indexes the rows itself
        say(f"not copied (SQLite's own search indexes, PostgreSQL builds its own): {', '.join(left)}")
    report: list[TableCopy] = []
    with target.atomic():
        for table in shared:
            target.execute_sql(f'ALTER TABLE "{table}" DISABLE TRIGGER USER')
            target.execute_sql(f'DELETE FROM "{table}"')  # what the migrations seeded: the source has its own
        for table in _parents_first(target, shared):
            copied = _copy_table(src, target, table)
            report.append(copied)
            say(f"{table}: {copied.rows} rows, checksum {copied.checksum} (read back: same)")
        for table in shared:
            target.execute_sql(f'ALTER TABLE "{table}" ENABLE TRIGGER USER')
        _advance_sequences(target, shared)
    return report


def _columns(src: sqlite3.Connection, target: peewee.PostgresqlDatabase, table: str) -> list[str]:
    generated = {
        r[0]
        for r in target.execute_sql(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? AND is_generated = 'ALWAYS'",
            (table,),
        ).fetchall()
    }
    src_columns = {r[1] for r in src.execute(f'PRAGMA table_info("{table}")')} | {"rowid"}  # an FTS table's key is its rowid
    return [c.name for c in target.get_columns(table) if c.name not in generated and c.name in src_columns]


def _source_rows(src: sqlite3.Connection, table: str, columns: list[str]) -> Iterator[list[tuple[Any, ...]]]:
    names = ", ".join("rowid" if c == "rowid" else f'"{c}"' for c in columns)
    cursor = src.execute(f'SELECT {names} FROM "{table}"')
    while batch := cursor.fetchmany(BATCH):
        yield batch


def _copy_table(src: sqlite3.Connection, target: peewee.PostgresqlDatabase, table: str) -> TableCopy:
    columns = _columns(src, target, table)
    quoted = ", ".join(f'"{c}"' for c in columns)
    insert = f'INSERT INTO "{table}" ({quoted}) VALUES %s'
    source = _Checksum()
    conn = target.connection()
    with conn.cursor() as cursor:
        for batch in _source_rows(src, table, columns):
            source.add(batch)
            try:
                pg_extras.execute_values(cursor, insert, batch, page_size=BATCH)  # one statement per batch
            except psycopg2.Error as exc:  # SQLite let a value in that the column's type refuses
                raise MigrationRefused(f"{table}: PostgreSQL refused a row: {str(exc).strip()}; nothing was committed") from None
    back = _Checksum()
    with conn.cursor() as reader:  # a cursor in the server: a large table is not held in memory
        reader.execute(f'DECLARE read_back NO SCROLL CURSOR FOR SELECT {quoted} FROM "{table}"')
        while True:
            reader.execute(f"FETCH {BATCH} FROM read_back")
            rows = reader.fetchall()
            if not rows:
                break
            back.add(rows)
        reader.execute("CLOSE read_back")
    expected, got = (source.rows, source.hexdigest()), (back.rows, back.hexdigest())
    if got != expected:
        raise MigrationRefused(
            f"{table}: read back {got[0]} rows (checksum {got[1]}), the source has {expected[0]} ({expected[1]}); nothing was committed"
        )
    return TableCopy(table, source.rows, source.hexdigest())


def _advance_sequences(target: peewee.PostgresqlDatabase, tables: list[str]) -> None:
    """Each serial column's sequence past the largest copied id (copied rows kept their ids). Today's ids
    are snowflakes (db.next_id) and no table has one; a serial column added later would collide without it."""
    serial = target.execute_sql(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() AND column_default LIKE 'nextval(%%'"
    ).fetchall()
    for table, column in serial:
        if table in tables:
            sequence = f"pg_get_serial_sequence('\"{table}\"', '{column}')"
            target.execute_sql(f'SELECT setval({sequence}, COALESCE(MAX("{column}"), 1), MAX("{column}") IS NOT NULL) FROM "{table}"')
