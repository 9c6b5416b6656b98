"""A SQLite datasource opened so that a query reaches that one file and nothing else.

Python's `sqlite3` links its own copy of SQLite; the platform's database is held by apsw's. POSIX locks
are per process, so a `sqlite3` connection that ever opens `platform.db` (ATTACH, VACUUM INTO, a hard
link or a symlink planted as the datasource) releases apsw's locks when it closes, checkpoints and
deletes the live WAL under the running server. Hence: the file is checked by resolved path and by
inode before it is opened, and an authorizer lets a statement read and call plain functions only.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from pathlib import Path
from typing import Any

MAX_ROWS = 200
QUERY_TIMEOUT_S = 10.0
MAX_VALUE_BYTES = 16 * 1024 * 1024  # longest string or blob a query may build (randomblob(1e9) allocates 1 GB)

# Pragmas that only read, with an argument that names a table or index (or a row limit for the checks).
_NAMED_PRAGMAS = frozenset(
    {
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "foreign_key_check",
        "integrity_check",
        "quick_check",
    }
)
# Pragmas that only read when given no value (`PRAGMA user_version = 5` writes; it is refused).
_VALUE_PRAGMAS = frozenset(
    {"user_version", "application_id", "data_version", "page_count", "page_size", "freelist_count", "encoding", "collation_list", "function_list"}
)
# Functions that load code, touch files or hand out pointers (most are missing from Python's build; refused by name anyway).
_DENIED_FUNCTIONS = frozenset(
    {"load_extension", "fts3_tokenizer", "readfile", "writefile", "edit", "fsdir", "zipfile", "sqlar_compress", "sqlar_uncompress", "lsmode"}
)
_READS = frozenset({sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE})


REFUSAL = "a datasource query may only read this datasource (no ATTACH, DETACH, VACUUM, writes, file functions or pragmas other than read-only ones)"


def is_refusal(exc: sqlite3.Error) -> bool:
    """Whether the authorizer refused the statement (SQLite words it several ways)."""
    return getattr(exc, "sqlite_errorname", "") == "SQLITE_AUTH" or "not authorized" in str(exc)


class Refused(Exception):
    """The datasource file may not be opened (its message is safe to show: it names no path)."""


def authorize(action: int, arg1: str | None, arg2: str | None, _db: str | None, _source: str | None) -> int:
    """Allow reading and plain functions; deny ATTACH, DETACH, VACUUM, writes, DDL and all but read-only pragmas."""
    if action in _READS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_DENY if (arg2 or "").lower() in _DENIED_FUNCTIONS else sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA:
        name = (arg1 or "").lower()
        # `pragma_database_list` and friends come here too (they would show the files' paths)
        if name in _NAMED_PRAGMAS or (name in _VALUE_PRAGMAS and arg2 is None):
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_UPDATE and arg1 == "sqlite_master":
        # SQLite's own check while it connects an eponymous virtual table (json_each, pragma_table_info);
        # a real write cannot follow: the connection is read-only and writable_schema is refused
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY  # ATTACH (and so VACUUM / VACUUM INTO), DETACH, writes, DDL, transactions


def _identity(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def check_file(path: Path, data_dir: str, allowed: list[Path]) -> str:
    """The resolved path of a datasource file that lies in one of `allowed` and is not the platform's database."""
    resolved = path.resolve()
    if not any(root in resolved.parents for root in allowed):
        raise Refused("the datasource file is outside the workspace's datasource folders")
    data = Path(data_dir).resolve()
    if data in resolved.parents and (data / "datasources") not in resolved.parents:
        raise Refused("the datasource file lies in the data directory")
    try:
        info = os.stat(resolved)
    except OSError:
        raise Refused("the datasource file is missing") from None
    if not stat.S_ISREG(info.st_mode):
        raise Refused("the datasource file is not a regular file")
    db = str(data / "platform.db")
    platform_files = {_identity(db + suffix) for suffix in ("", "-wal", "-shm", "-journal")} - {None}
    if (info.st_dev, info.st_ino) in platform_files:
        raise Refused("the datasource file is the platform database")
    return str(resolved)


def run_query(path: str, sql: str, data_dir: str, allowed: list[Path]) -> dict[str, Any]:
    """Run one read-only statement on a checked datasource file (blocking: call in an executor)."""
    checked = check_file(Path(path), data_dir, allowed)
    before = _identity(checked)
    # as_uri() percent-encodes the name: `%2e%2e%2f`, `?` or `#` in it cannot change the file or its mode
    conn = sqlite3.connect(Path(checked).as_uri() + "?mode=ro", uri=True, timeout=2, check_same_thread=False)
    try:
        if _identity(checked) != before:  # swapped between the check and the open: the opened file is unknown
            raise Refused("the datasource file changed while it was opened")
        if hasattr(conn, "enable_load_extension"):
            conn.enable_load_extension(False)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        conn.execute("PRAGMA query_only = 1")
        conn.set_authorizer(authorize)
        deadline = time.monotonic() + QUERY_TIMEOUT_S
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        cur = conn.execute(sql)
        columns = [c[0] for c in cur.description or []]
        rows = cur.fetchmany(MAX_ROWS + 1)
    finally:
        conn.close()
    return {"columns": columns, "rows": [list(r) for r in rows[:MAX_ROWS]], "truncated": len(rows) > MAX_ROWS}
