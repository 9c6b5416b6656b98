"""The change feed port: per-table versions that move whenever a row of the table changes.

In-memory caches (memo.py, the auth cache, the wiki's vector matrices) compare a table's version with
the one they read under, and drop what they kept when it moved: no query per check. Today the versions
are SQLite's row-change and WAL hooks of this process (db.py); a second backend (PostgreSQL's
LISTEN/NOTIFY, issue 31) bumps them for every process's writes.

    changes.subscribe("auth_epoch")      # from now on its version moves with each row change
    changes.versions(("wiki_page",))     # a tuple to compare with the one read before
"""

from __future__ import annotations

from typing import Protocol

from platform_server import db


class ChangeFeed(Protocol):
    def subscribe(self, table: str) -> None:
        """Keep a version for `table` from now on (idempotent)."""

    def versions(self, tables: tuple[str, ...]) -> tuple[int, ...]:
        """The current version of each subscribed table, in order (a change moves it at least once after
        it is visible to every reader: a read cached between the write and its commit is dropped)."""

    def settled(self) -> bool:
        """Whether a read made now on this thread sees committed state only (no open transaction, whose
        snapshot may predate another's commit): only then may its result be kept."""


class SqliteHookFeed:
    """The default: counters bumped by SQLite's update, rollback and WAL hooks (`db.WATCHED_TABLES`)."""

    def subscribe(self, table: str) -> None:
        db.watch_table(table)

    def versions(self, tables: tuple[str, ...]) -> tuple[int, ...]:
        counters = db.WATCHED_TABLES
        return tuple([counters[t] for t in tables])

    def settled(self) -> bool:
        return not db.database.connection().in_transaction


class PostgresFeed(SqliteHookFeed):
    """PostgreSQL: the same counters, bumped by this process's writes (pg.Database tracks them)."""

    def settled(self) -> bool:
        return not db.database.obj.in_transaction()  # peewee's own BEGIN/COMMIT bookkeeping (autocommit otherwise)


_current: ChangeFeed = SqliteHookFeed()
_subscribed: set[str] = set()  # a feed installed later learns what modules subscribed at import time


def use(feed: ChangeFeed) -> None:
    """Install the process's change feed (at startup), subscribed to every table subscribed so far."""
    global _current
    for table in sorted(_subscribed):
        feed.subscribe(table)
    _current = feed


def current() -> ChangeFeed:
    return _current


def subscribe(table: str) -> None:
    _subscribed.add(table)
    _current.subscribe(table)


def version(table: str) -> int:
    return _current.versions((table,))[0]


def versions(tables: tuple[str, ...]) -> tuple[int, ...]:
    return _current.versions(tables)


def settled() -> bool:
    return _current.settled()
