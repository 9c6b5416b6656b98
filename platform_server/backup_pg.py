"""`backup` and `restore` when the database is PostgreSQL (`database_url`): the archive holds a pg_dump
(custom format) where a SQLite install's holds its file, so an archive never silently lacks the database.

Backup: one REPEATABLE READ transaction exports its snapshot; the rows the archive's files are chosen by
(wiki materials, uploads, agents) are read in it and pg_dump dumps that same snapshot (`--snapshot`), so
the dump and the file list agree as the SQLite path's single copy does. Restore: pg_restore into a new,
empty database in one transaction (`--single-transaction --exit-on-error`): it is all there or nothing.
Both need PostgreSQL's client programs (Debian: postgresql-client, installed with the server); without
them the command is refused, never half-done.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from platform_server.lazy import lazy_import

pg = lazy_import("platform_server.pg")
psycopg2 = lazy_import("psycopg2")

DUMP = "platform.pgdump"  # the archive member holding the dump (a SQLite archive's is platform.db)
TOOL_TIMEOUT_S = 24 * 3600  # a dump or restore is as long as the data; only a hung tool is stopped


class PgBackupError(Exception):
    """Why a PostgreSQL backup or restore cannot go on."""


def tool(name: str) -> str:
    """The path of pg_dump / pg_restore, or a refusal that says what to install."""
    found = shutil.which(name)
    if found is None:
        raise PgBackupError(
            f"the database is PostgreSQL and {name} is not installed: install PostgreSQL's client programs "
            "(Debian: apt-get install postgresql-client) and run the command again"
        )
    return found


def _env(url: str) -> dict[str, str]:
    env = dict(os.environ)
    password = urlsplit(url).password
    if password:
        env["PGPASSWORD"] = password
    return env


def _run(argv: list[str], url: str) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=_env(url), timeout=TOOL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise PgBackupError(f"{os.path.basename(argv[0])} did not finish within {TOOL_TIMEOUT_S} s") from None
    if done.returncode != 0:
        raise PgBackupError(f"{os.path.basename(argv[0])} failed: {done.stderr.strip()[-2000:]}")


@dataclass
class Snapshot:
    """What one snapshot of the live database names: the files it needs and its schema version."""

    refs: set[str]
    agents: set[str]
    migrations: list[str]


def _safe(name: object) -> bool:
    return isinstance(name, str) and bool(name) and "/" not in name and "\\" not in name and name not in (".", "..")


def _read(cursor: Any) -> Snapshot:
    cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    tables = {r[0] for r in cursor.fetchall()}
    if "schema_migration" not in tables:
        raise PgBackupError("the database at database_url is not a platform database (no schema_migration table)")
    refs: set[str] = set()
    if "wiki_raw" in tables:
        cursor.execute("SELECT kb_id, stored_name FROM wiki_raw")
        refs |= {f"wiki/{int(kb)}/raw/{name}" for kb, name in cursor.fetchall() if _safe(name)}
    if "upload" in tables:
        cursor.execute("SELECT user_id, stored_name FROM upload")
        refs |= {f"uploads/{int(user)}/{name}" for user, name in cursor.fetchall() if _safe(name)}
    agents: set[str] = set()
    if "agent" in tables:
        cursor.execute("SELECT id FROM agent")
        agents = {str(int(r[0])) for r in cursor.fetchall()}
    cursor.execute("SELECT name FROM schema_migration ORDER BY name")
    return Snapshot(refs, agents, [r[0] for r in cursor.fetchall()])


def dump(url: str, target: str) -> Snapshot:
    """pg_dump of one snapshot into `target`, and what that snapshot's rows name."""
    pg_dump = tool("pg_dump")
    conn = psycopg2.connect(**pg.connect_params(url))
    try:
        conn.set_session(isolation_level="REPEATABLE READ", readonly=True)
        with conn.cursor() as cursor:
            cursor.execute("SELECT pg_export_snapshot()")  # valid while this transaction is open
            snapshot_id = cursor.fetchone()[0]
            found = _read(cursor)
            _run([pg_dump, "--format=custom", f"--snapshot={snapshot_id}", f"--file={target}", "--dbname", url], url)
        conn.rollback()
    finally:
        conn.close()
    return found


def check_dump(path: str) -> None:
    """Refuse a dump pg_restore cannot read (a damaged or foreign file)."""
    _run([tool("pg_restore"), "--list", path], "")


def _tables(url: str) -> list[str]:
    conn = psycopg2.connect(**pg.connect_params(url))
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
            return sorted(r[0] for r in cursor.fetchall())
    finally:
        conn.close()


def restore(url: str, path: str, migrations: list[str]) -> None:
    """pg_restore the dump into the empty database at `url` in one transaction, then check its schema
    version is the manifest's (a mismatch drops what was restored again)."""
    pg_restore = tool("pg_restore")
    try:
        existing = _tables(url)
    except psycopg2.Error as exc:
        raise PgBackupError(f"cannot connect to database_url: {str(exc).strip()}") from None
    if existing:
        raise PgBackupError(
            f"the database at database_url is not empty ({len(existing)} tables): restore into a new database (createdb), "
            "so nothing of the present one is overwritten"
        )
    _run([pg_restore, "--no-owner", "--no-privileges", "--single-transaction", "--exit-on-error", "--dbname", url, path], url)
    conn = psycopg2.connect(**pg.connect_params(url))
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT name FROM schema_migration ORDER BY name")
            restored = [r[0] for r in cursor.fetchall()]
            if sorted(restored) != sorted(migrations):
                for table in _tables(url):
                    cursor.execute(f'DROP TABLE IF EXISTS "{table}" CASCADE')
                conn.commit()
                raise PgBackupError("the backup's database does not match its manifest")
    finally:
        conn.close()
